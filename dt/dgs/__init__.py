"""Dependency-guided synchronization (DGS): parallel stream programs beyond keys.

Seed 003 §4. Pipeline position: beside the DT pipeline. A user (or, for a monitor,
the compiler) writes a sequential stream program with a dependence relation on its
event tags and fork/join functions (:mod:`~dt.dgs.spec`, Definition 4.1); this package
checks that the parallel runs it allows agree with the sequential one
(:mod:`~dt.dgs.consistency`, C1–C3 of Definition 4.3, by a property-based search with
minimal counterexamples), represents and checks synchronization plans
(:mod:`~dt.dgs.plan`, Definitions 4.5–4.6) and chooses one for given input streams and
workers (:mod:`~dt.dgs.optimizer`, §4.4.3). The runtimes that execute a plan are in
:mod:`qre.runtime.dgs`; the seed's applications are :mod:`~dt.dgs.examples`.

Takes and returns: a :class:`~dt.dgs.spec.Spec` of user functions; plans are frozen
trees of :class:`~dt.dgs.plan.Worker` over implementation tags (a tag on one input
stream, :class:`~dt.dgs.plan.ImplTag`).

Costs: the checker runs the user's functions on a few events per example (hundreds of
examples in well under a second for the seed's programs); validity and the optimizer
are quadratic in the number of implementation tags (dependence graph).
"""

from .consistency import Counterexample, InconsistentSpec, assert_consistent, check_consistency
from .optimizer import InputStream, optimize, random_plan
from .plan import ImplTag, Plan, PlanError, Worker, sequential, validate
from .spec import Event, Fork, Join, Spec, StateType, TagSet

__all__ = [
    "Counterexample",
    "Event",
    "Fork",
    "ImplTag",
    "InconsistentSpec",
    "InputStream",
    "Join",
    "Plan",
    "PlanError",
    "Spec",
    "StateType",
    "TagSet",
    "Worker",
    "assert_consistent",
    "check_consistency",
    "optimize",
    "random_plan",
    "sequential",
    "validate",
]
