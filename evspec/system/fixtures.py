"""Synthetic systems for tests and documentation.

``corpus_system()`` is the machine the acceptance corpus describes (corpus/README.md: software,
tracepoint, breakpoint, uprobe, power and msr PMUs; 2 CPUs; uprobe_events but no kprobe_events);
``intel_system()`` adds an Intel-style ``cpu`` PMU, two uncore memory-controller PMUs and
``intel_pt``; ``hybrid_system()`` adds ``cpu_core``/``cpu_atom`` instead (``cpu_atom`` with the
auto counter reload format ``acr_mask``). Tracepoint ids are those of a real 6.18 kernel. The
perf parse-events tables run on the last two (tests/data/systems/).
"""

from __future__ import annotations

import copy
from typing import Any

from evspec.system.snapshot import SNAPSHOT_VERSION, SnapshotSystem


def _alias(definition: str, **side: Any) -> dict[str, Any]:
    return {
        "definition": definition,
        "unit": side.get("unit"),
        "scale": side.get("scale"),
        "per_pkg": side.get("per_pkg", False),
        "snapshot": side.get("snapshot", False),
    }


CORPUS_PMUS: dict[str, Any] = {
    "software": {"type": 1, "format": {}, "events": {}, "cpus": None, "cpumask": None},
    "tracepoint": {"type": 2, "format": {}, "events": {}, "cpus": None, "cpumask": None},
    "breakpoint": {"type": 5, "format": {}, "events": {}, "cpus": None, "cpumask": None},
    "uprobe": {
        "type": 8,
        "format": {"retprobe": "config:0", "ref_ctr_offset": "config:32-63"},
        "events": {},
        "cpus": None,
        "cpumask": None,
    },
    "power": {
        "type": 9,
        "format": {"event": "config:0-7"},
        "events": {"energy-psys": _alias("event=0x05", unit="Joules", scale="2.3283064365386962890625e-10")},
        "cpus": None,
        "cpumask": "0",
    },
    "msr": {
        "type": 10,
        "format": {"event": "config:0-63"},
        "events": {"tsc": _alias("event=0x00"), "smi": _alias("event=0x04")},
        "cpus": None,
        "cpumask": None,
    },
}

#: Intel core PMU format terms (as in /sys/bus/event_source/devices/cpu/format)
INTEL_CORE_FORMAT = {
    "event": "config:0-7",
    "umask": "config:8-15",
    "edge": "config:18",
    "pc": "config:19",
    "any": "config:21",
    "inv": "config:23",
    "cmask": "config:24-31",
    "in_tx": "config:32",
    "in_tx_cp": "config:33",
    "ldlat": "config1:0-15",
    "offcore_rsp": "config1:0-63",
    "frontend": "config1:0-23",
}

INTEL_CORE_EVENTS = {
    "cpu-cycles": _alias("event=0x3c"),
    "instructions": _alias("event=0xc0"),
    "branch-instructions": _alias("event=0xc4"),
    "branch-misses": _alias("event=0xc5"),
    "bus-cycles": _alias("event=0x3c,umask=0x01"),
    "cache-references": _alias("event=0x2e,umask=0x4f"),
    "cache-misses": _alias("event=0x2e,umask=0x41"),
    "ref-cycles": _alias("event=0x00,umask=0x03"),
    "mem-loads": _alias("event=0xcd,umask=0x1,ldlat=3"),
    "mem-stores": _alias("event=0xd0,umask=0x82"),
    "cycles-ct": _alias("event=0x3c,in_tx=1,in_tx_cp=1"),
    "topdown-retiring": _alias("event=0x00,umask=0x80", scale="4", unit="slots"),
    "ocr.demand_data_rd": _alias("event=0xb7,umask=0x01,offcore_rsp=?"),
    "ld_lat.any": _alias("event=0xcd,umask=0x01,ldlat=?"),
}

INTEL_PT = {
    "format": {
        "pt": "config:0",
        "cyc": "config:1",
        "pwr_evt": "config:4",
        "tsc": "config:10",
        "noretcomp": "config:11",
        "branch": "config:13",
        "mtc_period": "config:14-17",
        "cyc_thresh": "config:19-22",
        "psb_period": "config:24-27",
    },
    "events": {},
    "cpus": None,
    "cpumask": None,
}

UNCORE_IMC = {
    "format": {
        "event": "config:0-7",
        "umask": "config:8-15",
        "edge": "config:18",
        "inv": "config:23",
        "thresh": "config:24-31",
    },
    "events": {
        "cas_count_read": _alias("event=0x04,umask=0x03", unit="MiB", scale="6.103515625e-5"),
        "cas_count_write": _alias("event=0x04,umask=0x0c", unit="MiB", scale="6.103515625e-5"),
        "clockticks": _alias("event=0x00,umask=0x00"),
    },
    "cpus": None,
    "cpumask": "0",
}

TRACEPOINTS: dict[str, dict[str, int]] = {
    "initcall": {
        "initcall_finish": 21,
        "initcall_level": 23,
        "initcall_start": 22,
    },
    "irq": {
        "irq_handler_entry": 225,
        "irq_handler_exit": 224,
        "softirq_entry": 223,
        "softirq_exit": 222,
        "softirq_raise": 221,
        "tasklet_entry": 220,
        "tasklet_exit": 219,
    },
    "msr": {
        "rdpmc": 2152,
        "read_msr": 2154,
        "write_msr": 2153,
    },
    "power": {
        "cpu_frequency": 565,
        "cpu_frequency_limits": 564,
        "cpu_idle": 568,
        "cpu_idle_miss": 567,
        "dev_pm_qos_add_request": 555,
        "dev_pm_qos_remove_request": 553,
        "dev_pm_qos_update_request": 554,
        "guest_halt_poll_ns": 552,
        "pm_qos_add_request": 560,
        "pm_qos_remove_request": 558,
        "pm_qos_update_flags": 556,
        "pm_qos_update_request": 559,
        "pm_qos_update_target": 557,
        "pstate_sample": 566,
        "suspend_resume": 563,
        "wakeup_source_activate": 562,
        "wakeup_source_deactivate": 561,
    },
    "raw_syscalls": {
        "sys_enter": 443,
        "sys_exit": 442,
    },
    "sched": {
        "sched_kthread_stop": 380,
        "sched_kthread_stop_ret": 379,
        "sched_kthread_work_execute_end": 376,
        "sched_kthread_work_execute_start": 377,
        "sched_kthread_work_queue_work": 378,
        "sched_migrate_task": 371,
        "sched_move_numa": 360,
        "sched_pi_setprio": 362,
        "sched_prepare_exec": 364,
        "sched_process_exec": 365,
        "sched_process_exit": 369,
        "sched_process_fork": 366,
        "sched_process_free": 370,
        "sched_process_hang": 361,
        "sched_process_wait": 367,
        "sched_skip_cpuset_numa": 356,
        "sched_skip_vma_numa": 357,
        "sched_stat_runtime": 363,
        "sched_stick_numa": 359,
        "sched_swap_numa": 358,
        "sched_switch": 372,
        "sched_wait_task": 368,
        "sched_wake_idle_without_ipi": 355,
        "sched_wakeup": 374,
        "sched_wakeup_new": 373,
        "sched_waking": 375,
    },
    "signal": {
        "signal_deliver": 260,
        "signal_generate": 261,
    },
    "skb": {
        "consume_skb": 2309,
        "kfree_skb": 2310,
        "skb_copy_datagram_iovec": 2308,
    },
    "sock": {
        "inet_sk_error_report": 2286,
        "inet_sock_set_state": 2287,
        "sk_data_ready": 2285,
        "sock_exceed_buf_limit": 2288,
        "sock_rcvqueue_full": 2289,
        "sock_recv_length": 2283,
        "sock_send_length": 2284,
    },
    "swiotlb": {
        "swiotlb_bounced": 441,
    },
    "syscalls": {
        "sys_enter_bpf": 586,
        "sys_enter_clock_nanosleep": 474,
        "sys_enter_close": 776,
        "sys_enter_close_range": 922,
        "sys_enter_exit_group": 216,
        "sys_enter_fsopen": 1047,
        "sys_enter_mq_open": 2066,
        "sys_enter_open": 784,
        "sys_enter_open_by_handle_at": 1131,
        "sys_enter_open_tree": 942,
        "sys_enter_open_tree_attr": 930,
        "sys_enter_openat": 782,
        "sys_enter_openat2": 780,
        "sys_enter_perf_event_open": 588,
        "sys_enter_pidfd_open": 341,
        "sys_enter_process_vm_readv": 720,
        "sys_enter_process_vm_writev": 718,
        "sys_enter_read": 842,
        "sys_enter_readahead": 615,
        "sys_enter_readlink": 848,
        "sys_enter_readlinkat": 850,
        "sys_enter_readv": 834,
        "sys_enter_write": 840,
        "sys_enter_writev": 832,
        "sys_exit_bpf": 585,
        "sys_exit_clock_nanosleep": 473,
        "sys_exit_close": 775,
        "sys_exit_close_range": 921,
        "sys_exit_exit_group": 215,
        "sys_exit_fsopen": 1046,
        "sys_exit_mq_open": 2065,
        "sys_exit_open": 783,
        "sys_exit_open_by_handle_at": 1130,
        "sys_exit_open_tree": 941,
        "sys_exit_open_tree_attr": 929,
        "sys_exit_openat": 781,
        "sys_exit_openat2": 779,
        "sys_exit_perf_event_open": 587,
        "sys_exit_pidfd_open": 340,
        "sys_exit_process_vm_readv": 719,
        "sys_exit_process_vm_writev": 717,
        "sys_exit_read": 841,
        "sys_exit_readahead": 614,
        "sys_exit_readlink": 847,
        "sys_exit_readlinkat": 849,
        "sys_exit_readv": 833,
        "sys_exit_write": 839,
        "sys_exit_writev": 831,
    },
    "task": {
        "task_newtask": 205,
        "task_prctl_unknown": 203,
        "task_rename": 204,
    },
    "timer": {
        "hrtimer_cancel": 457,
        "hrtimer_expire_entry": 459,
        "hrtimer_expire_exit": 458,
        "hrtimer_setup": 461,
        "hrtimer_start": 460,
        "itimer_expire": 455,
        "itimer_state": 456,
        "tick_stop": 454,
        "timer_base_idle": 462,
        "timer_cancel": 463,
        "timer_expire_entry": 465,
        "timer_expire_exit": 464,
        "timer_init": 467,
        "timer_start": 466,
    },
}

CORPUS_FEATURES = {
    "kernel_release": "6.18.0",
    "kprobe_events": False,
    "uprobe_events": True,
    "btf_vmlinux": True,
}


def corpus_data(cwd: str | None = None) -> dict[str, Any]:
    """The snapshot data of the corpus machine (a fresh copy each call)."""
    return {
        "evspec_system": SNAPSHOT_VERSION,
        "pmus": copy.deepcopy(CORPUS_PMUS),
        "tracefs": {"available": True, "reason": None, "help": [], "events": copy.deepcopy(TRACEPOINTS)},
        "cpus": "0-1",
        "features": dict(CORPUS_FEATURES),
        "cwd": cwd or "/nonexistent-evspec-corpus",
        "confine_files": True,
    }


def corpus_system(cwd: str | None = None) -> SnapshotSystem:
    """The corpus machine; files exist only inside ``cwd`` (the built BPF fixture folder)."""
    return SnapshotSystem(corpus_data(cwd), cwd=cwd or "/nonexistent-evspec-corpus")


#: the 9p module's trace system (its name starts with a digit: perf 7.3's parse-events test)
TRACEPOINTS_9P = {"9p_client_req": 2401, "9p_client_res": 2400, "9p_protocol_dump": 2399, "9p_fid_ref": 2398}
#: the s390 kvm module's trace system (a '-' in its name: perf's parse-events test, run on s390x)
TRACEPOINTS_KVM_S390 = {"kvm_s390_create_vm": 2410, "kvm_s390_destroy_vm": 2411}


def core_pmu_data(pmu_type: int, cpus: str | None) -> dict[str, Any]:
    """The snapshot data of an Intel core PMU of this type (and CPU list, for a hybrid one)."""
    return {
        "type": pmu_type,
        "format": dict(INTEL_CORE_FORMAT),
        "events": copy.deepcopy(INTEL_CORE_EVENTS),
        "cpus": cpus,
        "cpumask": None,
    }


def intel_system(cwd: str | None = None) -> SnapshotSystem:
    """The corpus machine plus an Intel ``cpu`` PMU, ``uncore_imc_0``/``uncore_imc_1``, ``intel_pt``,
    and the trace systems of perf's parse-events test (``9p``, ``kvm-s390``)."""
    data = corpus_data(cwd)
    data["cpus"] = "0-3"
    data["pmus"]["cpu"] = core_pmu_data(4, None)
    data["pmus"]["uncore_imc_0"] = dict(copy.deepcopy(UNCORE_IMC), type=16)
    data["pmus"]["uncore_imc_1"] = dict(copy.deepcopy(UNCORE_IMC), type=17)
    data["pmus"]["intel_pt"] = dict(copy.deepcopy(INTEL_PT), type=11)
    data["tracefs"]["events"]["9p"] = dict(TRACEPOINTS_9P)
    data["tracefs"]["events"]["kvm-s390"] = dict(TRACEPOINTS_KVM_S390)
    return SnapshotSystem(data, cwd=data["cwd"])


def hybrid_system(cwd: str | None = None) -> SnapshotSystem:
    """The corpus machine plus hybrid ``cpu_core`` (CPUs 0-7) and ``cpu_atom`` (CPUs 8-15)."""
    data = corpus_data(cwd)
    data["cpus"] = "0-15"
    data["pmus"]["cpu_core"] = core_pmu_data(4, "0-7")
    data["pmus"]["cpu_atom"] = core_pmu_data(12, "8-15")
    data["pmus"]["cpu_atom"]["format"]["acr_mask"] = "config2:0-63"
    del data["pmus"]["cpu_atom"]["events"]["topdown-retiring"]
    data["tracefs"]["events"]["9p"] = dict(TRACEPOINTS_9P)
    return SnapshotSystem(data, cwd=data["cwd"])
