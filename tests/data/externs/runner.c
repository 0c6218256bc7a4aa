/* The libbpf side of tests/test_externs_live.py: open and load OBJ with libbpf, run program
 * PROG once (BPF_PROG_TEST_RUN, 8 zero bytes of context), and print one JSON line: the verdict,
 * the program's return value and, when MAP is given, entry 0 of that map in hex. libbpf's own
 * messages go to stderr. */
#include <stdio.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

int main(int argc, char **argv)
{
	unsigned char ctx[8] = {0}, value[4096];
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	int err, key = 0;
	size_t i, size;

	if (argc < 3) {
		fprintf(stderr, "usage: %s OBJ PROG [MAP]\n", argv[0]);
		return 2;
	}
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj) {
		printf("{\"loaded\":false,\"stage\":\"open\"}\n");
		return 0;
	}
	err = bpf_object__load(obj);
	if (err) {
		printf("{\"loaded\":false,\"stage\":\"load\",\"errno\":%d}\n", -err);
		return 0;
	}
	prog = bpf_object__find_program_by_name(obj, argv[2]);
	if (!prog)
		return 3;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .ctx_in = ctx, .ctx_size_in = sizeof(ctx));
	err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
	printf("{\"loaded\":true,\"run\":%d,\"retval\":%u", err, opts.retval);
	if (argc > 3) {
		map = bpf_object__find_map_by_name(obj, argv[3]);
		size = map ? bpf_map__value_size(map) : 0;
		if (!map || size > sizeof(value) || bpf_map_lookup_elem(bpf_map__fd(map), &key, value))
			return 4;
		printf(",\"value\":\"");
		for (i = 0; i < size; i++)
			printf("%02x", value[i]);
		printf("\"");
	}
	printf("}\n");
	bpf_object__close(obj);
	return 0;
}
