/* What a libbpf (the sid chroot's 1.7, against which tests/test_libbpf_section_table.py builds this
 * with clang 21) makes of section names: per object (one program in a section of the name under
 * test, tests/bpf_elf.py), one JSON line with the section, libbpf_prog_type_by_name's and
 * libbpf_attach_type_by_name's answers (an errno when they have none), and the result of loading
 * the object (0, or the errno and libbpf's first warning). What reaches the kernel (program type,
 * expected attach type, flags) the test reads from the BPF_PROG_LOAD calls themselves.
 *
 *   sections17 OBJ.o...
 *   sections17 --names      libbpf's list of the section names it knows, as it prints it
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>
#include "json_string.h"

static char first_warning[512];
static char names[8192];

static int keep_warning(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (level == LIBBPF_DEBUG && strstr(fmt, "supported section(type) names are:")) {
		vsnprintf(names, sizeof(names), fmt, args);
		names[strcspn(names, "\n")] = '\0';
	}
	if (level == LIBBPF_WARN && !first_warning[0]) {
		vsnprintf(first_warning, sizeof(first_warning), fmt, args);
		first_warning[strcspn(first_warning, "\n")] = '\0';
	}
	return 0;
}

static void by_name(const char *section)
{
	enum bpf_prog_type type;
	enum bpf_attach_type attach;

	printf(",\"prog_type_by_name\":");
	if (libbpf_prog_type_by_name(section, &type, &attach) == 0) {
		printf("{\"type\":");
		put_str(libbpf_bpf_prog_type_str(type));
		printf(",\"attach_type\":");
		put_str(libbpf_bpf_attach_type_str(attach));
		printf("}");
	} else {
		printf("{\"errno\":%d}", errno);
	}
	printf(",\"attach_type_by_name\":");
	if (libbpf_attach_type_by_name(section, &attach) == 0) {
		put_str(libbpf_bpf_attach_type_str(attach));
	} else {
		printf("{\"errno\":%d}", errno);
	}
}

int main(int argc, char **argv)
{
	libbpf_set_print(keep_warning);
	if (argc == 2 && strcmp(argv[1], "--names") == 0) {
		enum bpf_prog_type type;
		enum bpf_attach_type attach;

		libbpf_prog_type_by_name("?", &type, &attach);  /* no such name: libbpf lists the names it knows */
		printf("%s\n", names);
		return names[0] ? 0 : 1;
	}
	for (int i = 1; i < argc; i++) {
		struct bpf_object *obj;
		struct bpf_program *prog;

		first_warning[0] = '\0';
		printf("{\"object\":");
		put_str(argv[i]);
		obj = bpf_object__open_file(argv[i], NULL);
		if (!obj) {
			printf(",\"open_errno\":%d,\"warning\":", errno);
			put_str(first_warning);
			printf("}\n");
			continue;
		}
		prog = bpf_object__next_program(obj, NULL);
		printf(",\"section\":");
		put_str(prog ? bpf_program__section_name(prog) : NULL);
		if (prog)
			by_name(bpf_program__section_name(prog));
		int err = bpf_object__load(obj);
		printf(",\"autoload\":%s,\"load_errno\":%d,\"warning\":", prog && bpf_program__autoload(prog) ? "true" : "false",
		       err < 0 ? -err : 0);
		put_str(err < 0 ? first_warning : "");
		printf("}\n");
		bpf_object__close(obj);
	}
	return 0;
}
