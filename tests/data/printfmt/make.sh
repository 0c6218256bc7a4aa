#!/bin/sh
# How perf61.data and perf61.script were made (as root, with Debian's perf 6.1): tracepoints whose
# print formats need no kernel symbols (%pS is resolved with the machine reading the file), their
# records and what perf script prints for them. tests/test_printfmt.py compares evspec script's
# output with perf61.script.
set -e
cd "$(dirname "$0")"
perf record -q -o perf61.data \
    -e syscalls:sys_enter_openat -e syscalls:sys_exit_openat -e syscalls:sys_enter_read \
    -e syscalls:sys_exit_read -e sched:sched_process_exec -e sched:sched_process_exit \
    -e sched:sched_process_fork -e sched:sched_switch -e sched:sched_wakeup \
    -e signal:signal_generate -e signal:signal_deliver -e rcu:rcu_utilization \
    -e kmem:mm_page_alloc -e task:task_newtask -e task:task_rename -e sched:sched_stat_runtime \
    -- sh -c 'cat /etc/hostname > /dev/null; sleep 0.01; kill -USR1 $$ 2>/dev/null; true'
perf script -i perf61.data > perf61.script
