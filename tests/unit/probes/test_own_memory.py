"""The run's own device memory ledger and the memory rule for a neighbour the process views cannot show
(issue 41). No GPU exists here, so the ledger's marks are written as PyTorch's allocator would give them;
the ledger itself, on a real GPU in its own PID namespace with a real neighbour outside it, is proven by
bench/gpu_fault_matrix.py (the namespace cases, docs/measurements/)."""

from __future__ import annotations

import pytest

from validation.checks.measuring import NodeMeasuring
from validation.idle import Ownership
from validation.probes import gpu_watch, own_memory, telemetry
from validation.probes.own_memory import Mark, OwnMemory

BUS = "00000000:04:00.0"
ME = 4242


def ledger(*marks: tuple[float, float, float]) -> OwnMemory:
    """A ledger for one GPU with 400 MiB in use before the run, a 500 MiB context, and marks of
    (time, reserved MiB now, cumulative reserved MiB)."""
    bus = telemetry.normalize_bus_id(BUS) or BUS
    own = OwnMemory(devices={bus: 0}, base_mib={bus: 400.0}, context_mib={bus: 500.0})
    own.marks.extend(Mark(t, {bus: r}, {bus: c}) for t, r, c in marks)
    return own


def sample(t: float, used_mib: float, *, listed: tuple[tuple[int, float], ...] = (),
           ours: frozenset[int] = frozenset({ME})) -> gpu_watch.WatchSample:
    from validation.records import GpuProcess
    return gpu_watch.WatchSample(
        t=t, gpus=(telemetry.GpuSample(gpu=0, bus_id=BUS, util_pct=100.0, vram_used_mib=used_mib),),
        processes=tuple(GpuProcess(pid=pid, name="python3", bus_id=BUS, vram_mib=mib) for pid, mib in listed),
        ours=ours)


def test_the_allowance_is_the_context_and_what_the_allocator_can_have_held_around_the_moment() -> None:
    # 2 GiB reserved at t=10; by t=20 it reserved 8 GiB more (and may have freed them again)
    own = ledger((10.0, 2048.0, 2048.0), (20.0, 1024.0, 10240.0), (30.0, 1024.0, 10240.0))
    bus = next(iter(own.devices))
    assert own.allowance(15.0, bus) == 500.0 + 2048.0 + 8192.0
    # between the 2nd and 3rd marks it reserved nothing new; the bound reaches one mark back (a late reading)
    assert own.allowance(25.0, bus) == 500.0 + 2048.0 + 8192.0
    assert own.allowance(5.0, bus) is None and own.allowance(31.0, bus) is None      # outside the marks
    assert own.allowance(15.0, "0000:99:00.0") is None                              # not this run's GPU


def test_memory_nothing_accounts_for_is_over_the_base_the_listed_and_this_run() -> None:
    own = ledger((10.0, 2048.0, 2048.0), (20.0, 2048.0, 2048.0))
    bus = next(iter(own.devices))
    mine = frozenset({ME})
    # in a container nothing is listed: 400 base + 500 context + 2048 reserved = 2948 is all this run's
    assert own_memory.unaccounted_mib(2948.0, bus, {}, mine, ME, own, 15.0) == 0.0
    # a neighbour's 8 GiB beside it
    assert own_memory.unaccounted_mib(2948.0 + 8192, bus, {}, mine, ME, own, 15.0) == 8192.0
    # a listed neighbour accounts for its own memory (and is RF-GPU-BUSY by its name, not here)
    assert own_memory.unaccounted_mib(2948.0 + 8192, bus, {77: 8192.0}, mine, ME, own, 15.0) == 0.0
    # listed as itself, the run's own process counts at the larger of its listing and the ledger
    assert own_memory.unaccounted_mib(2948.0 + 300, bus, {ME: 2848.0}, mine, ME, own, 15.0) == 0.0


def test_a_probe_tool_of_this_run_that_the_view_cannot_show_leaves_the_moment_unjudged() -> None:
    own = ledger((10.0, 0.0, 0.0), (20.0, 0.0, 0.0))
    bus = next(iter(own.devices))
    tool = frozenset({ME, ME + 1})
    assert own_memory.unaccounted_mib(9000.0, bus, {}, tool, ME, own, 15.0) is None
    # where the view lists this run's processes, an unlisted one of them holds no GPU memory
    assert own_memory.unaccounted_mib(9000.0, bus, {ME: 500.0}, tool, ME, own, 15.0) == 9000 - 400 - 500


def test_no_ledger_or_no_reading_judges_nothing() -> None:
    assert own_memory.unaccounted_mib(9000.0, "x", {}, frozenset({ME}), ME, None, 1.0) is None
    own = ledger((10.0, 0.0, 0.0), (20.0, 0.0, 0.0))
    assert own_memory.unaccounted_mib(None, next(iter(own.devices)), {}, frozenset({ME}), ME, own, 15.0) is None


@pytest.fixture
def state() -> NodeMeasuring:
    s = NodeMeasuring(node="n1", allow_busy=False, owner=Ownership(pids=frozenset({ME})))
    s.own_memory = ledger((100.0, 1024.0, 1024.0), (110.0, 1024.0, 1024.0), (120.0, 1024.0, 1024.0))
    s.main_pid = ME

    class Samples:
        interval_s = 1.0

        def __init__(self) -> None:
            self.samples: list[gpu_watch.WatchSample] = []

        def read(self) -> list[gpu_watch.WatchSample]:
            return self.samples

    s.watcher = Samples()  # type: ignore[assignment]
    return s


def test_a_neighbour_no_view_lists_makes_the_numbers_of_its_window_invalid_with_its_own_code(
        state: NodeMeasuring) -> None:
    own = 400.0 + 500.0 + 1024.0
    state.watcher.samples[:] = [sample(100.5 + i, own + (8192.0 if 112 <= 100.5 + i <= 116 else 30.0))  # type: ignore[union-attr]
                                for i in range(19)]
    state.measurements[:] = [
        {"metric": "torch_matmul_bf16_tflops", "subject": "gpu0", "value": 690.0, "taken_from": 101.0,
         "taken_to": 109.0},
        {"metric": "torch_matmul_fp16_tflops", "subject": "gpu0", "value": 300.0, "taken_from": 111.0,
         "taken_to": 119.0}]
    found = state.watch_check("t.py::test_matmul", 100.0, 120.0, 0)
    assert found is not None and [u.gpu for u in found.unseen] == [0] and found.marked == 1 and found.numbers == 2
    clean, loaded = state.measurements
    assert clean.get("valid", True) and clean["watch"]["unaccounted_mib_max"] == {"gpu0": 30.0}
    assert loaded["valid"] is False and "someone the node cannot see" in loaded["invalid_reason"]
    assert loaded["watch"]["unseen"][0]["max_mib"] == 8192.0
    assert "8192 MiB in use that no listed process and not this run holds" in found.unseen[0].describe()


def test_the_runs_own_growth_below_the_bound_is_no_neighbour(state: NodeMeasuring) -> None:
    # lazily loaded kernels outside the allocator: a few hundred MiB, under UNSEEN_MIB
    own = 400.0 + 500.0 + 1024.0
    state.watcher.samples[:] = [sample(100.5 + i, own + 20 * i) for i in range(19)]  # type: ignore[union-attr]
    state.measurements[:] = [{"metric": "torch_matmul_bf16_tflops", "subject": "gpu0", "value": 690.0,
                              "taken_from": 101.0, "taken_to": 119.0}]
    found = state.watch_check("t.py::test_matmul", 100.0, 120.0, 0)
    assert found is not None and not found.unseen and found.marked == 0
    assert state.measurements[0]["watch"]["unaccounted_mib_max"]["gpu0"] == pytest.approx(20 * 18)
    assert own_memory.UNSEEN_MIB > 20 * 18
