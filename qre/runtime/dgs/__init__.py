"""Running DGS synchronization plans: workers, mailboxes, heartbeats (seed 003 §4.4.4).

Pipeline position: after :mod:`dt.dgs` (a specification and an S-valid plan), beside
the monitor runtime. :mod:`~qre.runtime.dgs.inputs` is the input instance (timed
streams and heartbeats, Definition 4.8), :mod:`~qre.runtime.dgs.mailbox` the selective
reordering, :mod:`~qre.runtime.dgs.worker` one worker's join/update/fork protocol as a
message-driven state machine; the drivers carry the messages:
:mod:`~qre.runtime.dgs.simulate` in a random order (the tests' adversary),
:mod:`~qre.runtime.dgs.parallel` over OS processes or threads (each a
:mod:`~qre.runtime.dgs.host` of workers reading their own streams), and
:mod:`spark_udf.dgs` on Spark; :mod:`~qre.runtime.dgs.monitor` runs a monitor on a plan
(``Monitor.run(..., workers=N)``).

Takes a specification, a plan and streams; returns the outputs ordered by the events
that produced them (:class:`~qre.runtime.dgs.simulate.Result`), equal to the sequential
specification's on the streams sorted by time (Theorem 4.13).

Costs: per event a few microseconds of protocol in Python plus the user's update;
per synchronizing event a request, a state and a fork for every worker below its
owner; a worker's buffers hold the events that wait for a dependent tag's heartbeat.
"""

from .inputs import Heartbeat, InputError, check_instance, sequential_input
from .parallel import WorkerFailed, run_parallel
from .simulate import Deadlock, Result, simulate

__all__ = [
    "Deadlock",
    "Heartbeat",
    "InputError",
    "Result",
    "WorkerFailed",
    "check_instance",
    "run_parallel",
    "sequential_input",
    "simulate",
]
