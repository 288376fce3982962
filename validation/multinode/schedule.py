"""Which nodes run together: pairwise rounds, a known-good partner, k-batches. Pure.

A schedule is a tuple of rounds; the groups of one round share no node and can run at the same
time. Patterns (SuperBench's all-nodes / pair-wise / k-batch, CVS's pairwise admission):

    all_nodes(nodes)          one round, one group of every node
    pairwise(nodes)           every pair exactly once, n-1 rounds (n rounds when n is odd)
    with_partner(nodes, p)    every other node with known-good p, one pair per round
    k_batch(nodes, k)         disjoint groups of k in one round; a lone leftover joins the last group
"""

from __future__ import annotations

from collections.abc import Sequence

from validation.multinode.model import ClusterError

Group = tuple[str, ...]
Round = tuple[Group, ...]


def _unique(nodes: Sequence[str], need: int) -> list[str]:
    names = list(nodes)
    if len(set(names)) != len(names):
        raise ClusterError(f"a node is listed twice in {names}")
    if len(names) < need:
        raise ClusterError(f"this pattern needs at least {need} nodes, got {len(names)}")
    return names


def all_nodes(nodes: Sequence[str]) -> tuple[Round, ...]:
    return ((tuple(_unique(nodes, 1)),),)


def pairwise(nodes: Sequence[str]) -> tuple[Round, ...]:
    """Round-robin (circle method): every unordered pair once, no node twice in a round."""
    names = _unique(nodes, 2)
    ring: list[str | None] = [*names, None] if len(names) % 2 else list(names)
    rounds: list[Round] = []
    for _ in range(len(ring) - 1):
        half = len(ring) // 2
        pairs = [(ring[i], ring[-1 - i]) for i in range(half)]
        rounds.append(tuple(tuple(sorted((a, b), key=names.index)) for a, b in pairs
                            if a is not None and b is not None))
        ring = [ring[0], ring[-1], *ring[1:-1]]   # rotate all but the first
    return tuple(rounds)


def with_partner(nodes: Sequence[str], partner: str) -> tuple[Round, ...]:
    """Every node paired with one known-good partner; the partner is in every pair, so one per round."""
    names = _unique(nodes, 2)
    if partner not in names:
        raise ClusterError(f"partner {partner!r} is not one of the nodes {names}")
    return tuple(((partner, n),) for n in names if n != partner)


def k_batch(nodes: Sequence[str], k: int) -> tuple[Round, ...]:
    """Disjoint groups of k nodes, all in one round; a leftover of one node joins the last group."""
    names = _unique(nodes, 2)
    if k < 2:
        raise ClusterError(f"k-batch needs k >= 2, not {k}")
    groups = [names[i:i + k] for i in range(0, len(names), k)]
    if len(groups) > 1 and len(groups[-1]) == 1:
        leftover = groups.pop()
        groups[-1] = groups[-1] + leftover
    return (tuple(tuple(g) for g in groups),)


def groups(schedule: tuple[Round, ...]) -> list[Group]:
    """Every group of a schedule, round by round."""
    return [g for rnd in schedule for g in rnd]
