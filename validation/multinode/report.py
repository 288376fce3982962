"""The fleet report's cluster admission section, and the admitted nodes as hostfile and node list."""

from __future__ import annotations

from validation.multinode.admission import AdmissionReport
from validation.multinode.hostfile import openmpi_hostfile, slurm_nodelist


def _num(value: float | None) -> str:
    return "not reported" if value is None else f"{value:.2f}"


def markdown(report: AdmissionReport, *, cluster: str) -> str:
    t = report.target
    threshold = t.target.threshold
    judged = (f"floor {threshold:g} GB/s" if threshold is not None else "record only") + f" ({t.target.source})"
    lines = [f"## Cluster admission: {cluster}", "",
             f"{len(report.admitted)} of {len(report.nodes)} nodes admitted. Judged: all_reduce bus bandwidth "
             f"at {t.size_bytes >> 30} GiB {t.place.replace('_', '-')}, {t.nodes} nodes x {t.gpus_per_node} GPUs, "
             f"{judged}; #wrong must be 0.", "",
             "| node | admitted | single-node | busbw (GB/s) | reason |", "|---|---|---|---|---|"]
    for n in report.nodes:
        why = "; ".join(n.reasons) or "; ".join(n.notes)
        lines.append(f"| {n.node} | {'yes' if n.admitted else 'no'} | {n.single_node} | {_num(n.busbw_gb_s)} | "
                     f"{why.replace('|', '/')} |")
    lines += ["", "| run | result | busbw (GB/s) | #wrong |", "|---|---|---|---|"]
    for j in report.runs:
        wrong = "not reported" if j.run.wrong is None else str(j.run.wrong)
        lines.append(f"| {'+'.join(j.run.nodes)} | {'pass' if j.passed else j.reason.replace('|', '/')} | "
                     f"{_num(j.run.busbw_gb_s)} | {wrong} |")
    return "\n".join(lines) + "\n"


def admitted_hostfile(report: AdmissionReport, slots: int) -> str:
    return openmpi_hostfile(report.admitted, slots) if report.admitted else ""


def admitted_nodelist(report: AdmissionReport) -> str:
    return slurm_nodelist(report.admitted) + "\n" if report.admitted else ""
