#!/usr/bin/python3
"""Stand-in for amd-smi on lab hosts, which have no AMD GPU: it prints the RAS views in the formats of the
real outputs (tests/fixtures/real/amd-smi-ras/ and amd-smi/, SOURCES.md there), with counts taken from a
state file, so a lab test can inject "a fatal CPER appears", "bad pages exceed the threshold", "PCIe
replays grow" and see the checks, the drain and the remediation react.

Interface (for the lab tests and the remediation playbook's lab proof):

  State file: $AMD_SMI_STANDIN_STATE, default /var/lib/rocm-fleet-standin/amd-smi.json (survives a reboot).
  $AMD_SMI_STANDIN_PROC (default /proc) is where it reads the boot from (tests give a fake one).
  A JSON object; every key is optional (absent = healthy, 0):
    gpus                  number of GPUs listed (default 8), BDFs 0000:05:00.0, 0000:26:00.0, ...
    cper_fatal            fatal CPER records on gpu `cper_gpu` (default gpu 0)
    cper_nonfatal         non-fatal corrected CPER records on gpu `cper_gpu`
    afids                 AFIDs printed on each of those records (default [30], as the amdsmi docs show)
    bad_pages_retired     retired pages on gpu `bad_pages_gpu` (default gpu 0)
    bad_pages_pending     pages pending retirement on gpu `bad_pages_gpu`
    pcie_replay           REPLAY_COUNT on gpu `pcie_gpu` (NAK_SENT_COUNT and L0_TO_RECOVERY_COUNT follow it)
    xgmi_wafl             XGMI_WAFL correctable count on gpu `xgmi_gpu`
    transient             true: the faults vanish at the next boot: the stand-in compares `boot` with the
                          current boot and, on a new one, clears every fault key in the file; false or absent:
                          they survive reboots, like bad pages in the GPU's EEPROM
    boot                  the boot the faults were injected in: "<boot_id> <PID 1's start time>"
                          (/proc/sys/kernel/random/boot_id, field 22 of /proc/1/stat). Both, because a lab
                          host shares the machine's kernel: its boot_id never changes, while its reboot starts
                          a new PID 1 (docs/lab.md; the lab's node_reboot_boot_time_command reads the same);
                          on a real host the boot_id changes. The injector may write it; where it is absent,
                          the stand-in's first call writes the current one (inject, then call, then reboot)
    unsupported           a list of sub-commands to answer like an amd-smi without them ("ras", "bad-pages"):
                          exit 2 with argparse's "invalid choice", as amd-smi before 6.4 does for `ras`

  Commands: `version`, `ras --cper [--severity ...] [--folder DIR]` (the folder is created, no .cper file is
  written), `bad-pages`, `metric` with `--pcie` / `--ecc-blocks` / `--ecc` and `--json` (others print the
  same sections). For the lab's GPU node (gpu_node.sh), the views of a healthy MI300X node are real outputs
  printed as they are, from $AMD_SMI_STANDIN_DATA (default /usr/local/share/rocm-fleet-standin), copies of
  tests/fixtures/real/amd-smi/ files without their `$ ` line:
    monitor ...           mi300x-x8-amdsmi-changelog-6.1.0-monitor-ptumv.txt (8 GPUs, VRAM and use)
    topology ...          mi300x-x8-amdsmi-changelog-6.1.0-topology.txt (8 GPUs, xGMI, NUMA)
    firmware ...          mi300x-rocm-blogs-amd-smi-overview-firmware.txt: the one GPU that output shows,
                          printed once for each GPU with its number (no public output lists eight)
                        No public JSON output of these views exists: `--json` gets the text too (the suite's
                        parsers read either form).
  Partition modes, kept in the same state file so that idempotence, order and refusals are real:
    compute_partition     SPX (default), DPX, QPX or CPX: what `static --partition` prints on each GPU's primary
    memory_partition      NPS1 (default), NPS2 or NPS4      partition (PARTITION_ID 0), N/A on the others
    pending_memory        a memory mode `set --memory-partition` requested; the driver's next load applies it
                          (since ROCm 7.0 amd-smi no longer reloads the driver itself) and picks the compute mode
                          from it (NPS1 SPX, NPS2 DPX, NPS4 CPX), as aqua_vanjaram.c does
    busy                  true: every `set` fails with AMDSMI_STATUS_BUSY, as with a process on a GPU
    partition_boot        the boot the modes were set in ("<boot_id> <PID 1's start time>", as `boot` below): on
                          a later boot the stand-in returns them to SPX/NPS1 ("The GPU will always revert back to
                          this default SPX mode when the system is rebooted", amdgpu-docs; NPS1 too is the
                          pessimistic reading of what AMD does not say), as a real GPU comes up after a reboot
  `static --partition` prints tests/fixtures/real/amd-smi/mi300x-x8-amdgpu-docs-quick-start-static-partition-
  cpx-nps1-6.4.0.txt's layout for 8 GPUs times the partitions of the compute mode. `set --gpu all
  --compute-partition M` (or -C) accepts the driver's combinations only (SPX NPS1, DPX NPS1/NPS2, QPX
  NPS1/NPS4, CPX NPS1/NPS4) and otherwise prints the AMDSMI_STATUS_SETTING_UNAVAILABLE refusal of AMD's
  troubleshooting guide, exit 1; `set --memory-partition M` (or -M) asks AMD's [Y/N] question on stdin and
  records `pending_memory`. `--standin-driver-load` is the lab's modprobe stand-in loading amdgpu. A compute
  change and a driver load leave one render node per listed GPU in $AMD_SMI_STANDIN_DRI (default /dev/dri,
  where it exists): renderD128 up, as the driver gives each partition its own (ROCm 6.4.1+).
  Anything else exits 2 naming what the stand-in knows.

Install it as /usr/local/bin/amd-smi on a lab host (the lab hosts have no real amd-smi).
"""

import json
import os
import sys
from pathlib import Path

STATE = "/var/lib/rocm-fleet-standin/amd-smi.json"
DATA = "/usr/local/share/rocm-fleet-standin"
DRI = "/dev/dri"
VIEWS = {"monitor": "mi300x-x8-amdsmi-changelog-6.1.0-monitor-ptumv.txt",
         "topology": "mi300x-x8-amdsmi-changelog-6.1.0-topology.txt",
         "firmware": "mi300x-rocm-blogs-amd-smi-overview-firmware.txt"}
PROC = "/proc"
FAULTS = ("cper_fatal", "cper_nonfatal", "bad_pages_retired", "bad_pages_pending", "pcie_replay", "xgmi_wafl")
BDFS = ("0000:05:00.0", "0000:26:00.0", "0000:46:00.0", "0000:65:00.0", "0000:85:00.0", "0000:a6:00.0",
        "0000:c6:00.0", "0000:e5:00.0")
CPER_HEADER = "timestamp            gpu_id  severity             file_name         list of afids"
NO_PAGES = "No bad pages found."


def current_boot() -> str | None:
    """"<boot_id> <PID 1's start time>": a new boot of a real host changes the first, a lab host's the second."""
    proc = Path(os.environ.get("AMD_SMI_STANDIN_PROC", PROC))
    try:
        boot_id = (proc / "sys" / "kernel" / "random" / "boot_id").read_text().strip()
        pid1_start = (proc / "1" / "stat").read_text().rsplit(")", 1)[1].split()[19]    # field 22
    except (OSError, IndexError):
        return None
    return f"{boot_id} {pid1_start}"


def load_state() -> dict:
    path = Path(os.environ.get("AMD_SMI_STANDIN_STATE", STATE))
    try:
        state = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    boot = current_boot()
    if boot and state.get("partition_boot") not in (None, boot):
        state.update(compute_partition="SPX", memory_partition="NPS1", partition_boot=boot)
        state.pop("pending_memory", None)
        path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
        sync_render_nodes(state)
    if state.get("transient") and boot and state.get("boot") != boot:
        if state.get("boot") is not None:
            state = {k: v for k, v in state.items() if k not in FAULTS}  # a new boot: transient faults are gone
        state["boot"] = boot
        path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    return state


def count(state: dict, key: str, gpu: int, gpu_key: str) -> int:
    return int(state.get(key, 0)) if gpu == int(state.get(gpu_key, 0)) else 0


def cper(state: dict, args: list[str]) -> str:
    if "--folder" in args:
        Path(args[args.index("--folder") + 1]).mkdir(parents=True, exist_ok=True)
    afids = " ".join(str(a) for a in state.get("afids", [30]))
    rows, n = [CPER_HEADER], 0
    for gpu in range(int(state.get("gpus", 8))):
        for severity, key in (("FATAL", "cper_fatal"), ("NON_FATAL_CORRECTED", "cper_nonfatal")):
            for _ in range(count(state, key, gpu, "cper_gpu")):
                n += 1
                name = f"{'fatal' if severity == 'FATAL' else 'corrected'}-{n}.cper"
                rows.append(f"2025/07/10 09:03:09  {gpu:<7} {severity:<20} {name:<17} {afids}")
    return "\n".join(rows) + "\n"


def bad_pages(state: dict) -> str:
    out = []
    for gpu in range(int(state.get("gpus", 8))):
        out.append(f"GPU: {gpu}")
        for label, key in (("RETIRED", "bad_pages_retired"), ("PENDING", "bad_pages_pending"), ("UN_RES", None)):
            pages = count(state, key, gpu, "bad_pages_gpu") if key else 0
            if not pages:
                out.append(f"    {label}: {NO_PAGES}")
                continue
            out.append(f"    {label}:")
            for page in range(pages):
                out.append(f"        PAGE {page}:")
                out.append(f"            PAGE_ADDRESS: {0x1000 * (page + 1)}")
                out.append("            PAGE_SIZE: 4096")
                out.append(f"            STATUS: {'RESERVED' if label == 'RETIRED' else label}")
        out.append(" ")
    return "\n".join(out) + "\n"


def metric(state: dict, args: list[str]) -> str:
    everything = not any(a in args for a in ("--pcie", "-P", "--ecc-blocks", "-k", "--ecc", "-e"))
    gpus = []
    for gpu in range(int(state.get("gpus", 8))):
        replay = count(state, "pcie_replay", gpu, "pcie_gpu")
        entry: dict = {"gpu": gpu}
        if everything or "--pcie" in args or "-P" in args:
            entry["pcie"] = {"width": 16, "speed": {"value": 32, "unit": "GT/s"}, "replay_count": replay,
                             "l0_to_recovery_count": replay, "replay_roll_over_count": 0, "nak_sent_count": replay,
                             "nak_received_count": 0}
        if everything or "--ecc-blocks" in args or "-k" in args:
            entry["ecc_blocks"] = {"XGMI_WAFL": {"correctable_count": count(state, "xgmi_wafl", gpu, "xgmi_gpu"),
                                                 "uncorrectable_count": 0, "deferred_count": 0}}
        if everything or "--ecc" in args or "-e" in args:
            entry["ecc"] = {"total_correctable_count": 0, "total_uncorrectable_count": 0, "total_deferred_count": 0}
        gpus.append(entry)
    if "--json" in args:
        return json.dumps(gpus, indent=4) + "\n"
    out = []
    for entry in gpus:
        out.append(f"GPU: {entry['gpu']}")
        if "pcie" in entry:
            p = entry["pcie"]
            out += ["    PCIE:", "        WIDTH: 16", "        SPEED: 32 GT/s"]
            out += [f"        {k.upper()}: {p[k]}" for k in ("replay_count", "l0_to_recovery_count",
                                                          "replay_roll_over_count", "nak_sent_count",
                                                          "nak_received_count")]
        if "ecc_blocks" in entry:
            w = entry["ecc_blocks"]["XGMI_WAFL"]
            out += ["    ECC_BLOCKS:", "        XGMI_WAFL:", f"            CORRECTABLE_COUNT: {w['correctable_count']}",
                    "            UNCORRECTABLE_COUNT: 0", "            DEFERRED_COUNT: 0"]
        if "ecc" in entry:
            out += ["    ECC:", "        TOTAL_CORRECTABLE_COUNT: 0", "        TOTAL_UNCORRECTABLE_COUNT: 0",
                    "        TOTAL_DEFERRED_COUNT: 0"]
    return "\n".join(out) + "\n"


def real_view(name: str) -> str:
    text = (Path(os.environ.get("AMD_SMI_STANDIN_DATA", DATA)) / VIEWS[name]).read_text()
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("$ "))


def firmware(state: dict) -> str:
    one = real_view("firmware")
    body = one.split("\n", 1)[1]                     # after "GPU: 0"
    return "".join(f"GPU: {gpu}\n{body}" for gpu in range(int(state.get("gpus", 8))))


COMPATIBLE = {"SPX": ("NPS1",), "DPX": ("NPS1", "NPS2"), "QPX": ("NPS1", "NPS4"), "CPX": ("NPS1", "NPS4")}
PER_GPU = {"SPX": 1, "DPX": 2, "QPX": 4, "CPX": 8}
PROFILE = {"SPX": 0, "DPX": 1, "QPX": 2, "CPX": 3}
AUTO_COMPUTE = {"NPS1": "SPX", "NPS2": "DPX", "NPS4": "CPX"}
NPS_WARNING = """
          ****** WARNING ******

          Setting Dynamic Memory (NPS) partition modes require users to quit all GPU workloads.
          AMD SMI will then attempt to change memory (NPS) partition mode.
          Upon a successful set, AMD SMI will then initiate an action to restart AMD GPU driver.
          This action will change all GPU's in the hive to the requested memory (NPS) partition mode.

          Please use this utility with caution.

          Do you accept these terms? [Y/N] """


def save(state: dict) -> None:
    state["partition_boot"] = current_boot()
    path = Path(os.environ.get("AMD_SMI_STANDIN_STATE", STATE))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")


def static_partition(state: dict) -> str:
    compute, memory = state.get("compute_partition", "SPX"), state.get("memory_partition", "NPS1")
    out, index = [], 0
    for _ in range(int(state.get("gpus", 8))):
        for pid in range(PER_GPU[compute]):
            shown = (compute, memory) if pid == 0 else ("N/A", "N/A")
            out += [f"GPU: {index}", "    PARTITION:", f"        ACCELERATOR_PARTITION: {shown[0]}",
                    f"        MEMORY_PARTITION: {shown[1]}", f"        PARTITION_ID: {pid}", ""]
            index += 1
    return "\n".join(out)


def set_partition(state: dict, args: list[str]) -> int:
    def value(*names: str) -> str | None:
        for name in names:
            if name in args and args.index(name) + 1 < len(args):
                return args[args.index(name) + 1].upper()
        return None

    compute, memory = value("--compute-partition", "-C"), value("--memory-partition", "-M")
    if state.get("busy"):
        print("            30 | AMDSMI_STATUS_BUSY - Device busy\nValueError: Unable to set accelerator partition to "
              f"{compute or memory} on GPU ID: 0 BDF:0000:0c:00.0", file=sys.stderr)
        return 1
    if compute:
        current_memory = state.get("memory_partition", "NPS1")
        if compute not in COMPATIBLE or current_memory not in COMPATIBLE[compute]:
            print("[AMDSMI_STATUS_SETTING_UNAVAILABLE] Please check amd-smi partition --memory --accelerator for "
                  "available profiles.\nUsers may need to switch memory partition to another mode in order to "
                  "enable the desired accelerator partition.\n55 | AMDSMI_STATUS_SETTING_UNAVAILABLE - Setting is "
                  "not available", file=sys.stderr)
            return 1
        state["compute_partition"] = compute
        save(state)
        sync_render_nodes(state)
        for gpu in range(int(state.get("gpus", 8))):
            print(f"GPU: {gpu}\n    ACCELERATOR_PARTITION: Successfully set accelerator partition to {compute} "
                  f"(profile #{PROFILE[compute]})\n")
        return 0
    if memory:
        if memory not in AUTO_COMPUTE:
            print(f"[AMDSMI_STATUS_INVAL] {memory} is not a memory partition mode of this GPU", file=sys.stderr)
            return 1
        sys.stdout.write(NPS_WARNING)
        sys.stdout.flush()
        if sys.stdin.readline().strip().upper() != "Y":
            print("\nAborted: the terms were not accepted", file=sys.stderr)
            return 1
        state["pending_memory"] = memory
        save(state)
        for gpu in range(int(state.get("gpus", 8))):
            print(f"\n          GPU: {gpu}\n            MEMORY_PARTITION: Successfully set memory partition to "
                  f"{memory}")
        return 0
    print("amd-smi stand-in: set needs --compute-partition or --memory-partition", file=sys.stderr)
    return 2


def sync_render_nodes(state: dict) -> None:
    """One render node per listed GPU, renderD128 up, as the driver makes one per partition (ROCm 6.4.1+)."""
    dri = Path(os.environ.get("AMD_SMI_STANDIN_DRI", DRI))
    if not dri.is_dir():
        return
    listed = int(state.get("gpus", 8)) * PER_GPU[state.get("compute_partition", "SPX")]
    for node in dri.glob("renderD*"):
        if node.name[7:].isdigit() and int(node.name[7:]) >= 128 + listed:
            node.unlink()
    for minor in range(128, 128 + listed):
        (dri / f"renderD{minor}").touch()


def driver_load(state: dict) -> int:
    if state.get("busy"):
        print("modprobe: FATAL: Module amdgpu is in use.", file=sys.stderr)
        return 1
    if state.get("pending_memory"):
        state["memory_partition"] = state.pop("pending_memory")
    state["compute_partition"] = AUTO_COMPUTE[state.get("memory_partition", "NPS1")]
    save(state)
    sync_render_nodes(state)
    return 0


def main(argv: list[str]) -> int:
    args = argv[1:]
    state = load_state()
    command = args[0] if args else ""
    if command in state.get("unsupported", []):
        print(f"amd-smi: error: argument : invalid choice: '{command}'", file=sys.stderr)
        return 2
    if command == "version":
        sys.stdout.write("AMDSMI Tool: 26.0.0+standin | AMDSMI Library version: 26.0.0 | ROCm version: N/A\n")
    elif command == "ras" and "--cper" in args:
        sys.stdout.write(cper(state, args))
    elif command == "bad-pages":
        sys.stdout.write(bad_pages(state))
    elif command == "metric":
        sys.stdout.write(metric(state, args))
    elif command == "static" and "--partition" in args:
        sys.stdout.write(static_partition(state))
    elif command == "set":
        return set_partition(state, args)
    elif command == "--standin-driver-load":
        return driver_load(state)
    elif command == "firmware":
        sys.stdout.write(firmware(state))
    elif command in ("monitor", "topology"):
        sys.stdout.write(real_view(command))
    else:
        print(f"amd-smi stand-in: {' '.join(args) or '(no arguments)'} is not stood in for; it knows version, "
              "ras --cper, bad-pages, metric (--pcie, --ecc-blocks, --ecc, --json), monitor, topology and "
              "firmware as text, static --partition and set --compute-partition/--memory-partition", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
