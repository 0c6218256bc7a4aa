/* The libbpf side of tests/test_libbpf_semantics.py: open OBJ (maps pinned by name under
 * PIN_ROOT), load it, and print one JSON line for the verdict, then one per map and program as
 * BPF_OBJ_GET_INFO_BY_FD describes them, with the programs or maps held in each PROG_ARRAY and
 * map-in-map. libbpf's own messages go to stderr. */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

static void print_slots(int fd, const struct bpf_map_info *info)
{
	const char *sep = "";
	__u32 key;

	printf(",\"slots\":[");
	for (key = 0; key < info->max_entries && key < 64; key++) {
		char name[BPF_OBJ_NAME_LEN + 1] = "?";
		__u32 id, len;
		int held;

		if (bpf_map_lookup_elem(fd, &key, &id))
			continue;
		if (info->type == BPF_MAP_TYPE_PROG_ARRAY) {
			struct bpf_prog_info pi = {};

			held = bpf_prog_get_fd_by_id(id);
			len = sizeof(pi);
			if (held >= 0 && !bpf_obj_get_info_by_fd(held, &pi, &len))
				snprintf(name, sizeof(name), "%s", pi.name);
		} else {
			struct bpf_map_info mi = {};

			held = bpf_map_get_fd_by_id(id);
			len = sizeof(mi);
			if (held >= 0 && !bpf_obj_get_info_by_fd(held, &mi, &len))
				snprintf(name, sizeof(name), "%s", mi.name);
		}
		if (held >= 0)
			close(held);
		printf("%s[%u,\"%s\"]", sep, key, name);
		sep = ",";
	}
	printf("]");
}

int main(int argc, char **argv)
{
	LIBBPF_OPTS(bpf_object_open_opts, opts, .pin_root_path = argc > 2 ? argv[2] : NULL);
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct bpf_map *map;
	int err;

	if (argc < 2) {
		fprintf(stderr, "usage: %s OBJ [PIN_ROOT]\n", argv[0]);
		return 2;
	}
	obj = bpf_object__open_file(argv[1], &opts);
	if (!obj) {
		printf("{\"ok\":false,\"stage\":\"open\",\"errno\":%d}\n", errno);
		return 0;
	}
	err = bpf_object__load(obj);
	if (err) {
		printf("{\"ok\":false,\"stage\":\"load\",\"errno\":%d}\n", -err);
		bpf_object__close(obj);
		return 0;
	}
	printf("{\"ok\":true}\n");
	bpf_object__for_each_map(map, obj) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_map__fd(map);

		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;
		printf("{\"map\":\"%s\",\"id\":%u,\"type\":%u,\"key_size\":%u,\"value_size\":%u,"
		       "\"max_entries\":%u,\"flags\":%u,\"map_extra\":%llu,\"btf_key\":%u,\"btf_value\":%u",
		       info.name, info.id, info.type, info.key_size, info.value_size, info.max_entries,
		       info.map_flags, (unsigned long long)info.map_extra, info.btf_key_type_id,
		       info.btf_value_type_id);
		if (info.type == BPF_MAP_TYPE_PROG_ARRAY || info.type == BPF_MAP_TYPE_ARRAY_OF_MAPS ||
		    info.type == BPF_MAP_TYPE_HASH_OF_MAPS)
			print_slots(fd, &info);
		printf("}\n");
	}
	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);

		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		printf("{\"prog\":\"%s\",\"id\":%u,\"type\":%u,\"btf_id\":%u}\n", info.name, info.id,
		       info.type, info.btf_id);
	}
	bpf_object__close(obj);
	return 0;
}
