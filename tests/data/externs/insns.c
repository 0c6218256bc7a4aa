/* The libbpf side of tests/test_externs_live.py's instruction comparison: open and load OBJ with
 * libbpf and print, for each program, one JSON line: the verdict, the instructions libbpf gave the
 * kernel (bpf_program__insns after the load, in hex) and the kernel's count of them (xlated).
 * Every libbpf message goes to stderr, its debug lines too: they list the externs in libbpf's
 * order ("extern (kcfg) #N: ..., name NAME", "extern (ksym) #N: ..."). */
#include <stdarg.h>
#include <stdio.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

static int print_all(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return vfprintf(stderr, fmt, args);
}

int main(int argc, char **argv)
{
	const unsigned char *insns;
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	struct bpf_program *prog;
	struct bpf_object *obj;
	size_t i, size;
	int err, fd;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OBJ\n", argv[0]);
		return 2;
	}
	libbpf_set_print(print_all);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj)
		return 3;
	err = bpf_object__load(obj);
	bpf_object__for_each_program(prog, obj) {
		fd = bpf_program__fd(prog);
		printf("{\"prog\":\"%s\",\"loaded\":%s,\"errno\":%d,\"insns\":\"", bpf_program__name(prog),
		       err == 0 && fd >= 0 ? "true" : "false", -err);
		insns = (const unsigned char *)bpf_program__insns(prog);
		size = bpf_program__insn_cnt(prog) * sizeof(struct bpf_insn);
		for (i = 0; i < size; i++)
			printf("%02x", insns[i]);
		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
			printf("\",\"xlated\":%u}\n", info.xlated_prog_len / 8);
		else
			printf("\",\"xlated\":null}\n");
	}
	bpf_object__close(obj);
	return 0;
}
