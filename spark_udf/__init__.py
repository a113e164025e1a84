"""spark_udf: monitors over Spark DataFrames and streams (empty for now).

Pipeline position: the last stage, after the compiled engines (``codegen``):
a ``qre.Monitor`` runs once per key inside Spark.

It will provide ``local_session()``, ``monitor_frame(df, m, key=, time=,
tag=, value=)`` (batch) and ``monitor_stream(stream_df, m, ..., watermark=,
checkpoint=)`` (structured streaming), taking a DataFrame of events and
returning one output row per input event with the input's key, time and tag
columns plus ``status`` and ``value`` (../shared/API.md, "Spark").

This package is empty: it arrives with the [spark] issue.
"""
