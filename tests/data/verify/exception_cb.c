/* exception_cb.c - a program with an exception callback: btf_decl_tag("exception_callback:NAME")
 * names a global function nothing calls, which libbpf 1.8 appends to the program (its func info
 * included) so that the verifier finds it; the kernel refuses the program without it ("exception
 * callback type id not found in func_info"). With -DSTATIC_CB the callback is static: nothing
 * calls it, clang leaves it out, and libbpf cannot find it (ENOENT). tests/test_verify_exception_cb.py. */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

extern void bpf_throw(__u64 cookie) __ksym;

#ifdef STATIC_CB
static
#endif
__attribute__((noinline)) int exception_cb(__u64 cookie)
{
	return cookie + 1;
}

SEC("tc")
__attribute__((btf_decl_tag("exception_callback:exception_cb")))
int with_cb(struct __sk_buff *ctx)
{
	if (ctx->len > 100000)
		bpf_throw(5);
	return 0;
}

SEC("tc")
int plain(struct __sk_buff *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
