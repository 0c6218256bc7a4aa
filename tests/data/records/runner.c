/* runner.c - the libbpf side of tests/test_records_libbpf.py.
 *
 *   runner [-s NAME=INT]... [-p PERIOD] OBJ CMD [ARG]...
 *
 * Opens OBJ with libbpf, sets each global NAME of .rodata/.data/.bss to INT (found by name in the
 * object's BTF, written at its offset in the section's initial value), loads it and attaches every
 * autoload program with bpf_program__attach; a perf_event program goes on a cpu-clock event of
 * every CPU sampling every PERIOD ns. Every RINGBUF map is read with ring_buffer__new, every
 * PERF_EVENT_ARRAY with perf_buffer__new. Then CMD runs (fork and execv after attaching).
 *
 * Output, one line each: "prog NAME SECTION" for every program attached, "map NAME ringbuf|perf"
 * for every map read, then "record MAP HEX" for each record read until CMD has exited, "lost MAP
 * N" for lost samples and "exit STATUS" last. libbpf's own messages go to stderr. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#define MAX_SETS 8
#define MAX_BUFS 8
#define PERF_PAGES 64

static void print_record(const char *map, const void *data, size_t size)
{
	const unsigned char *bytes = data;
	size_t i;

	printf("record %s ", map);
	for (i = 0; i < size; i++)
		printf("%02x", bytes[i]);
	printf("\n");
}

static int on_ring_record(void *ctx, void *data, size_t size)
{
	print_record(ctx, data, size);
	return 0;
}

static void on_perf_record(void *ctx, int cpu, void *data, __u32 size)
{
	print_record(ctx, data, size);
}

static void on_perf_lost(void *ctx, int cpu, __u64 count)
{
	printf("lost %s %llu\n", (const char *)ctx, (unsigned long long)count);
}

/* Writes VALUE into the global NAME of whichever data section of OBJ declares it. */
static int set_global(struct bpf_object *obj, const char *name, long long value)
{
	const struct btf *btf = bpf_object__btf(obj);
	struct bpf_map *map;
	int err;

	bpf_object__for_each_map(map, obj) {
		const char *dot = strchr(bpf_map__name(map), '.');
		const struct btf_type *sec;
		const struct btf_var_secinfo *vars;
		int id, i;

		if (!btf || !dot)
			continue;
		id = btf__find_by_name_kind(btf, dot, BTF_KIND_DATASEC);
		if (id < 0)
			continue;
		sec = btf__type_by_id(btf, id);
		vars = btf_var_secinfos(sec);
		for (i = 0; i < btf_vlen(sec); i++) {
			const struct btf_type *var = btf__type_by_id(btf, vars[i].type);
			size_t size;
			const void *initial = bpf_map__initial_value(map, &size);
			unsigned char *copy;

			if (strcmp(btf__name_by_offset(btf, var->name_off), name))
				continue;
			if (!initial || vars[i].offset + vars[i].size > size || vars[i].size > sizeof(value))
				return -EINVAL;
			copy = malloc(size);
			memcpy(copy, initial, size);
			memcpy(copy + vars[i].offset, &value, vars[i].size); /* little-endian */
			err = bpf_map__set_initial_value(map, copy, size);
			free(copy);
			return err;
		}
	}
	return -ENOENT;
}

static int attach_to_cpu_clock(struct bpf_program *prog, long period)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_period = period,
	};
	int cpu, fd;

	for (cpu = 0; cpu < libbpf_num_possible_cpus(); cpu++) {
		fd = syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			if (errno == ENODEV) /* a possible CPU that is not online */
				continue;
			return -errno;
		}
		if (!bpf_program__attach_perf_event(prog, fd))
			return -errno;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct perf_buffer *perf[MAX_BUFS];
	struct ring_buffer *rings = NULL;
	struct bpf_program *prog;
	struct bpf_object *obj;
	struct bpf_map *map;
	char *sets[MAX_SETS];
	long period = 1000000;
	int opt, err, status, nsets = 0, nperf = 0, i;
	pid_t child;

	while ((opt = getopt(argc, argv, "+s:p:")) != -1) {
		if (opt == 'p') {
			period = atol(optarg);
			continue;
		}
		if (opt != 's' || !strchr(optarg, '=') || nsets == MAX_SETS)
			return 2;
		sets[nsets++] = optarg;
	}
	if (argc - optind < 2) {
		fprintf(stderr, "usage: %s [-s NAME=INT]... [-p PERIOD] OBJ CMD [ARG]...\n", argv[0]);
		return 2;
	}
	obj = bpf_object__open_file(argv[optind], NULL);
	if (!obj)
		return 3;
	for (i = 0; i < nsets; i++) {
		char *eq = strchr(sets[i], '=');

		*eq = '\0';
		if (set_global(obj, sets[i], atoll(eq + 1))) {
			fprintf(stderr, "runner: cannot set %s\n", sets[i]);
			return 3;
		}
	}
	err = bpf_object__load(obj);
	if (err) {
		fprintf(stderr, "runner: load: %s\n", strerror(-err));
		return 3;
	}
	bpf_object__for_each_program(prog, obj) {
		if (!bpf_program__autoload(prog))
			continue;
		if (bpf_program__type(prog) == BPF_PROG_TYPE_PERF_EVENT)
			err = attach_to_cpu_clock(prog, period);
		else
			err = bpf_program__attach(prog) ? 0 : -errno;
		if (err) {
			fprintf(stderr, "runner: attach %s: %s\n", bpf_program__name(prog), strerror(-err));
			return 4;
		}
		printf("prog %s %s\n", bpf_program__name(prog), bpf_program__section_name(prog));
	}
	bpf_object__for_each_map(map, obj) {
		void *name = (void *)bpf_map__name(map);

		if (bpf_map__type(map) == BPF_MAP_TYPE_RINGBUF) {
			if (!rings)
				rings = ring_buffer__new(bpf_map__fd(map), on_ring_record, name, NULL);
			else if (ring_buffer__add(rings, bpf_map__fd(map), on_ring_record, name))
				rings = NULL;
			if (!rings)
				return 5;
			printf("map %s ringbuf\n", bpf_map__name(map));
		} else if (bpf_map__type(map) == BPF_MAP_TYPE_PERF_EVENT_ARRAY) {
			if (nperf == MAX_BUFS)
				return 5;
			perf[nperf] = perf_buffer__new(bpf_map__fd(map), PERF_PAGES, on_perf_record, on_perf_lost,
						       name, NULL);
			if (!perf[nperf++])
				return 5;
			printf("map %s perf\n", bpf_map__name(map));
		}
	}
	fflush(stdout);
	child = fork();
	if (child == 0) {
		execv(argv[optind + 1], argv + optind + 1);
		_exit(127);
	}
	for (;;) {
		int done = waitpid(child, &status, WNOHANG) == child;

		if (rings)
			ring_buffer__poll(rings, 20);
		for (i = 0; i < nperf; i++)
			perf_buffer__poll(perf[i], 20);
		if (done)
			break;
	}
	if (rings)
		ring_buffer__consume(rings);
	for (i = 0; i < nperf; i++)
		perf_buffer__consume(perf[i]);
	printf("exit %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	return 0;
}
