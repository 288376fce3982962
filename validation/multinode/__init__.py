"""Multi-node validation: launch jobs across an inventory group with mpirun or srun, schedule
pairwise runs, and admit nodes into a cluster.

    inventory.py  the cluster as the inventory declares it (hosts, launcher, env, interface)
    hostfile.py   OpenMPI hostfile and Slurm node list (pure)
    launch.py     mpirun / srun command lines (pure)
    remote.py     run a launch over SSH (as the job user) with a timeout; sweep stray ranks off every node
    cluster_ssh.py  the cluster key's restricted authorized_keys line; checks on ssh_config values (pure)
    schedule.py   pairwise, known-good-partner and k-batch rounds (pure)
    targets.py    multi-node bus bandwidth targets by SKU, node count and GPU count (pure)
    admission.py  single-node result + pairwise busbw -> admitted / rejected with reasons (pure)
    report.py     the fleet report's admission section (Markdown)
    rails.py      per rail: ibv_devinfo port state and firmware, ib_write_bw argv and judging (pure but probe)
    rail_gids.py  RoCE v2 GID at the declared index, read from sysfs over SSH
    rail_runs.py  ib_write_bw server/client pairs per rail over SSH, saved and swept

The RCCL path has not run on real multi-node hardware; see docs/multinode.md.
"""
