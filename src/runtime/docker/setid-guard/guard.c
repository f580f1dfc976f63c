/*
 * mcpmgr's set-ID guard: the first program of a Docker server container whose engine has no
 * seccomp profile file mcpmgr can extend (docs/security.md W9).
 *
 *   guard FILTER COMMAND [ARG...]
 *
 * Reads FILTER (a classic BPF seccomp program, struct sock_filter[], written by mcpmgr's
 * src/runtime/setid-filter.ts), sets no_new_privs, installs the filter on top of Docker's own
 * (the kernel takes the most restrictive answer of all stacked filters), then replaces itself with
 * COMMAND, searched in PATH when it names no directory, as the container runtime would have.
 *
 * No C library: static, with no dynamic loader, so it runs in any image (distroless, musl,
 * glibc, scratch). x86_64 only; build with scripts/build-setid-guard.sh.
 */

typedef unsigned long usize;
typedef long isize;

#define SYS_read 0
#define SYS_write 1
#define SYS_open 2
#define SYS_close 3
#define SYS_execve 59
#define SYS_exit_group 231
#define SYS_prctl 157
#define SYS_seccomp 317

#define O_RDONLY 0
#define O_CLOEXEC 02000000
#define PR_SET_NO_NEW_PRIVS 38
#define SECCOMP_SET_MODE_FILTER 1

#define ENOENT 2
#define ENOEXEC 8
#define EACCES 13
#define ENOTDIR 20
#define ENAMETOOLONG 36
#define ELOOP 40
#define ESTALE 116

/* Exit statuses of a shell (and of runc's own messages): not found 127, found but not runnable 126. */
#define NOT_FOUND 127
#define CANNOT_RUN 126

#define MAX_INSNS 4096
#define PATH_MAX 4096

struct sock_filter {
	unsigned short code;
	unsigned char jt;
	unsigned char jf;
	unsigned int k;
};
struct sock_fprog {
	unsigned short len;
	struct sock_filter *filter;
};

static isize syscall3(isize nr, isize a, isize b, isize c) {
	isize ret;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
	return ret;
}

static isize syscall5(isize nr, isize a, isize b, isize c, isize d, isize e) {
	isize ret;
	register isize r10 __asm__("r10") = d;
	register isize r8 __asm__("r8") = e;
	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8) : "rcx", "r11", "memory");
	return ret;
}

static usize length(const char *s) {
	usize n = 0;
	while (s[n]) n++;
	return n;
}

static void say(const char *s) {
	syscall3(SYS_write, 2, (isize)s, (isize)length(s));
}

static void __attribute__((noreturn)) quit(int status) {
	for (;;) syscall3(SYS_exit_group, status, 0, 0);
}

/* "mcpmgr set-ID guard: A B C\n" on stderr, then the exit status. */
static void __attribute__((noreturn)) fail(const char *a, const char *b, const char *c, int status) {
	say("mcpmgr set-ID guard: ");
	say(a);
	say(b);
	say(c);
	say("\n");
	quit(status);
}

static const char *error_text(isize err) {
	switch (err) {
	case ENOENT: return "no such file or directory";
	case EACCES: return "permission denied";
	case ENOTDIR: return "not a directory";
	case ENAMETOOLONG: return "file name too long";
	case ELOOP: return "too many levels of symbolic links";
	case ENOEXEC: return "exec format error";
	case 1: return "operation not permitted";
	case 22: return "invalid argument";
	case 14: return "bad address";
	case 12: return "out of memory";
	case 7: return "argument list too long";
	case 26: return "text file busy";
	default: return "system error";
	}
}

static struct sock_filter program[MAX_INSNS];

/* The filter file, whole, or the guard ends: never run the command without it. */
static unsigned short load_filter(const char *path) {
	isize fd = syscall3(SYS_open, (isize)path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0) fail("cannot open the filter ", path, "", CANNOT_RUN);
	char *into = (char *)program;
	usize have = 0, room = sizeof program;
	for (;;) {
		if (have == room) fail("the filter is too long: ", path, "", CANNOT_RUN);
		isize n = syscall3(SYS_read, fd, (isize)(into + have), (isize)(room - have));
		if (n == -4) continue; /* EINTR */
		if (n < 0) fail("cannot read the filter ", path, "", CANNOT_RUN);
		if (n == 0) break;
		have += (usize)n;
	}
	syscall3(SYS_close, fd, 0, 0);
	if (have == 0 || have % sizeof(struct sock_filter) != 0) fail("the filter is malformed: ", path, "", CANNOT_RUN);
	return (unsigned short)(have / sizeof(struct sock_filter));
}

static int starts_with(const char *s, const char *prefix) {
	while (*prefix)
		if (*s++ != *prefix++) return 0;
	return 1;
}

static int has_slash(const char *s) {
	for (; *s; s++)
		if (*s == '/') return 1;
	return 0;
}

/*
 * execve, and for a file the kernel cannot run (ENOEXEC: a script without "#!") the shell on it, as
 * the C library's execvp does: the image's command was run by Docker's init (tini) with execvp, so
 * such a script worked before the guard. argv[-1] is free (it held the filter's path, read already),
 * which gives the shell's argument list, "/bin/sh FILE ARG...", without copying. Returns the errno
 * of the file itself when neither runs.
 */
static isize exec(const char *file, char **argv, char **envp) {
	isize err = -syscall3(SYS_execve, (isize)file, (isize)argv, (isize)envp);
	if (err != ENOEXEC) return err;
	char *first = argv[0];
	argv[-1] = "/bin/sh";
	argv[0] = (char *)file;
	syscall3(SYS_execve, (isize)argv[-1], (isize)(argv - 1), (isize)envp);
	argv[0] = first;
	return err;
}

/* execvp's search: each PATH entry in turn (an empty one is the working directory); a file found but
   not runnable is remembered and the search goes on, as the C library does. Returns only on failure.
   argv is the guard's own from its third entry (run's argv[-1] is the filter's slot: exec above). */
static void __attribute__((noreturn)) run(char **argv, char **envp) {
	const char *command = argv[0];
	if (command[0] == 0) fail("empty command", "", "", NOT_FOUND);
	if (has_slash(command)) {
		isize err = exec(command, argv, envp);
		fail(command, ": ", error_text(err), err == ENOENT || err == ENOTDIR ? NOT_FOUND : CANNOT_RUN);
	}
	/* runc's default when the image sets no PATH. */
	const char *path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (char **e = envp; *e; e++)
		if (starts_with(*e, "PATH=")) {
			path = *e + 5;
			break;
		}
	usize name_len = length(command);
	static char candidate[PATH_MAX];
	isize denied = 0;
	for (const char *p = path;;) {
		const char *end = p;
		while (*end && *end != ':') end++;
		usize dir_len = (usize)(end - p);
		if (dir_len + 1 + name_len + 1 <= sizeof candidate) {
			usize at = 0;
			for (usize i = 0; i < dir_len; i++) candidate[at++] = p[i];
			if (dir_len > 0) candidate[at++] = '/';
			for (usize i = 0; i < name_len; i++) candidate[at++] = command[i];
			candidate[at] = 0;
			isize err = exec(candidate, argv, envp);
			if (err == EACCES) denied = err;
			else if (err != ENOENT && err != ENOTDIR && err != ESTALE && err != ELOOP && err != ENAMETOOLONG)
				fail(candidate, ": ", error_text(err), CANNOT_RUN);
		}
		if (*end == 0) break;
		p = end + 1;
	}
	if (denied) fail(command, ": ", error_text(denied), CANNOT_RUN);
	fail(command, ": executable file not found in PATH ", path, NOT_FOUND);
}

__attribute__((used)) void guard_main(isize *stack) {
	isize argc = stack[0];
	char **argv = (char **)(stack + 1);
	char **envp = argv + argc + 1;
	if (argc < 3) fail("usage: guard FILTER COMMAND [ARG...]", "", "", NOT_FOUND);
	struct sock_fprog prog;
	prog.len = load_filter(argv[1]);
	prog.filter = program;
	/* Required to install a filter without CAP_SYS_ADMIN; mcpmgr's containers have it set already. */
	if (syscall5(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("cannot set no_new_privs", "", "", CANNOT_RUN);
	isize err = -syscall3(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, (isize)&prog);
	if (err != 0) fail("cannot install the seccomp filter: ", error_text(err), "", CANNOT_RUN);
	run(argv + 2, envp);
}

/* The kernel's entry: the stack holds argc, argv[], NULL, envp[], NULL. Aligned for the C call. */
__asm__(".globl _start\n"
	"_start:\n"
	"  xor %rbp, %rbp\n"
	"  mov %rsp, %rdi\n"
	"  and $-16, %rsp\n"
	"  call guard_main\n"
	"  hlt\n");
