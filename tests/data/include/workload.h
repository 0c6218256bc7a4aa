/* SPDX-License-Identifier: GPL-2.0 */
/* workload.h - the fixtures' filter on the test's own workload: a program that runs for every
 * task's syscall counts only the task whose comm is targ_comm (var:targ_comm='NAME'; the tests run
 * a copy of the workload under a name of their own), so that other processes add nothing. */
#ifndef EVSPEC_TESTS_WORKLOAD_H
#define EVSPEC_TESTS_WORKLOAD_H

#include <bpf/bpf_helpers.h>

const volatile char targ_comm[16] = {};

static __always_inline int is_workload(void)
{
	char comm[16];

	bpf_get_current_comm(comm, sizeof(comm));
	for (int i = 0; i < 16; i++) {
		if (comm[i] != targ_comm[i])
			return 0;
		if (!comm[i])
			break;
	}
	return 1;
}

#endif
