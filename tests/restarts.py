"""The independent oracle of restarted runs (Definition 5.4), shared by the restartability
and CRA tests: a run restarted with several threads' vectors against the union of the
threads run separately, with dt.reference only."""

from __future__ import annotations

from hypothesis import strategies as st
from strategies import data_values, sized_words

from dt.model import DT
from dt.reference import initial_config, outputs, step
from dt.values import BOT, TOP, XValue, union

__all__ = ["restart_runs", "restarted_vs_separate", "x_vectors"]


def restarted_vs_separate(dt: DT, word, threads) -> list[tuple[tuple, tuple]]:
    """After every prefix: (outputs of the run restarted with the threads' vectors,
    union of the outputs of the threads run separately), with dt.reference only.

    ``threads``: (position, data vector in X); position 0 is Δ_i, t ≥ 1 is Δ_{σ_t, x}.
    """
    bottom = (BOT,) * len(dt.initial)
    restarts: dict[int, tuple] = {}
    for position, x in threads:
        restarts[position] = tuple(union(a, b) for a, b in zip(restarts.get(position, bottom), x,
                                                                strict=True))
    config = initial_config(dt, restarts.get(0, bottom))
    single = [outputs(dt, config)]
    for t, (tag, d) in enumerate(word, start=1):
        config = step(dt, config, tag, d, restart=restarts.get(t))
        single.append(outputs(dt, config))
    joined: list[tuple[XValue, ...]] = [(BOT,) * len(dt.final) for _ in single]
    for position, x in threads:
        thread = initial_config(dt, x)
        for t in range(position, len(word) + 1):
            if t > position:
                tag, d = word[t - 1]
                thread = step(dt, thread, tag, d)
            joined[t] = tuple(union(a, b) for a, b in zip(joined[t], outputs(dt, thread),
                                                          strict=True))
    return list(zip(single, joined, strict=True))


def x_vectors(n: int):
    """Data vectors of X = {⊥}^I ∪ (D ∪ {⊤})^I."""
    return st.one_of(st.just((BOT,) * n),
                     st.tuples(*[st.one_of(st.just(TOP), data_values)] * n))


@st.composite
def restart_runs(draw, dt: DT):
    word = draw(sized_words(dt.alphabet, max_len=6))
    positions = st.integers(0, len(word))
    threads = draw(st.lists(st.tuples(positions, x_vectors(len(dt.initial))), max_size=4))
    return word, threads
