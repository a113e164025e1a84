"""Hypothesis profiles: ``ci`` (deterministic, bounded; the default) and ``dev`` (more examples).

Select with ``HYPOTHESIS_PROFILE=dev``.
"""

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=60,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession for every Spark test (starting the JVM costs seconds).

    Tiny Arrow batches: every key's events span several batches, so the
    batch "sorted" method must carry a key's configuration from one batch to
    the next, and the streaming processor receives a key's rows in pieces.
    """
    pytest.importorskip("pyspark")
    from spark_udf import local_session

    return local_session("qre-tests", master="local[2]",
                         config={"spark.sql.execution.arrow.maxRecordsPerBatch": "3"})


@pytest.fixture(scope="module")
def codegen_cache(tmp_path_factory):  # type: ignore[no-untyped-def]
    """A fresh codegen module cache (``QRE_CACHE_DIR``) for one test module: its kernels
    compile there, not in the user's cache."""
    path = tmp_path_factory.mktemp("codegen-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QRE_CACHE_DIR", str(path))
        yield path
