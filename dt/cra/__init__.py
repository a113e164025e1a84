"""Cost register automata and the restartable conversion (seed 003, §5.2.2 end, §5.4.1).

Pipeline position: beside the DT (``dt``), not on the query path. Takes a
:class:`~dt.model.DT`; returns a deterministic copyful CRA
(:func:`cra_from_dt`, Theorem 5.8), a restartable DT from a CRA
(:func:`cra_to_dt`; also the plain DT of a CRA), or both composed — a restartable DT equivalent to
any DT that has one (:func:`make_restartable`), which lets
:func:`dt.constructions.concat` and :func:`~dt.constructions.iterate` take
any DT.

Costs: DT → CRA explores at most 2^|Q| control states (Theorem 5.9: the
blow-up is real); CRA → DT is linear in the CRA; the conversion then checks
its result on statuses (Theorem 5.3's search). The CRA's reference
evaluator (:mod:`~dt.cra.reference`) costs its step's updates per event.

Modules: :mod:`~dt.cra.model` (the CRA), :mod:`~dt.cra.reference`,
:mod:`~dt.cra.from_dt`, :mod:`~dt.cra.to_dt`, :mod:`~dt.cra.restartable`,
:mod:`~dt.cra.json_io`.
"""

from .from_dt import cra_from_dt
from .model import CONFLICT, CRA, Step, Update
from .reference import cra_evaluate
from .restartable import Conversion, make_restartable
from .to_dt import NoRestartableForm, cra_to_dt

__all__ = ["CONFLICT", "CRA", "Conversion", "NoRestartableForm", "Step", "Update",
           "cra_evaluate", "cra_from_dt", "cra_to_dt", "make_restartable"]
