/* Shared by every fake NVIDIA library: read the host profile named by FAKE_NVIDIA_PROFILE.
 *
 * A profile is a small TOML file (see ../profiles/). Only the subset the profiles use is read:
 * `[section]` headers, `key = "string"` and `key = integer`, `#` comments. Python reads the same
 * files with tomllib, so a profile that Python accepts and C misreads fails a test loudly.
 *
 * The file is re-read on every lookup: profiles are tiny and this keeps the fakes stateless.
 * Set FAKE_NVIDIA_TRACE=<file> to append the name of every exported call made (one per line).
 */
#ifndef FAKE_PROFILE_H
#define FAKE_PROFILE_H

#include <ctype.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define HELPER static __attribute__((unused)) /* not every fake uses every helper */

HELPER void fk_trace(const char *name) {
    const char *path = getenv("FAKE_NVIDIA_TRACE");
    if (!path || !*path) return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT, 0644);
    if (fd < 0) return;
    char line[160];
    int n = snprintf(line, sizeof line, "%s\n", name);
    if (n > 0) (void)!write(fd, line, (size_t)n);
    close(fd);
}

HELPER int fk_has_profile(void) {
    const char *path = getenv("FAKE_NVIDIA_PROFILE");
    if (!path || !*path) return 0;
    return access(path, R_OK) == 0;
}

HELPER char *fk_trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1])) *--end = '\0';
    return s;
}

/* Cut a trailing comment that is not inside a quoted string. */
HELPER void fk_strip_comment(char *s) {
    int quoted = 0;
    for (; *s; s++) {
        if (*s == '"') quoted = !quoted;
        else if (*s == '#' && !quoted) { *s = '\0'; return; }
    }
}

/* Copy the raw value of `key` in `[section]` (quotes removed) into out. 1 if found. */
HELPER int fk_lookup(const char *section, const char *key, char *out, size_t outlen) {
    const char *path = getenv("FAKE_NVIDIA_PROFILE");
    if (!path) return 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[512], current[128] = "";
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        fk_strip_comment(line);
        char *s = fk_trim(line);
        if (*s == '\0') continue;
        if (*s == '[') {
            char *close = strchr(s, ']');
            if (close) { *close = '\0'; snprintf(current, sizeof current, "%s", fk_trim(s + 1)); }
            continue;
        }
        char *eq = strchr(s, '=');
        if (!eq || strcmp(current, section) != 0) continue;
        *eq = '\0';
        if (strcmp(fk_trim(s), key) != 0) continue;
        char *value = fk_trim(eq + 1);
        size_t len = strlen(value);
        if (len >= 2 && value[0] == '"' && value[len - 1] == '"') { value[len - 1] = '\0'; value++; }
        snprintf(out, outlen, "%s", value);
        found = 1;
    }
    fclose(f);
    return found;
}

HELPER long fk_int(const char *section, const char *key, long dflt) {
    char buf[64];
    if (!fk_lookup(section, key, buf, sizeof buf)) return dflt;
    return strtol(buf, NULL, 0);
}

HELPER int fk_has(const char *section, const char *key) {
    char buf[8];
    return fk_lookup(section, key, buf, sizeof buf);
}

HELPER void fk_str(const char *section, const char *key, const char *dflt, char *out, size_t n) {
    if (!fk_lookup(section, key, out, n)) snprintf(out, n, "%s", dflt);
}

/* Take the time a real driver takes to initialise: `key` (milliseconds) of `[section]`, else
 * `dflt_ms`. A sleep, not a busy loop: a real cuInit waits on the kernel module, not the CPU. */
HELPER void fk_latency(const char *section, const char *key, long dflt_ms) {
    long ms = fk_int(section, key, dflt_ms);
    if (ms <= 0) return;
    struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&left, &left) != 0) {} /* a signal cut it short: sleep the rest */
}

/* Copy a string the way NVML does: NVML_ERROR_INSUFFICIENT_SIZE (7) when it does not fit. */
HELPER int fk_copy_out(const char *value, char *buf, unsigned int len) {
    if (!buf) return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    if (strlen(value) + 1 > len) return 7;
    memcpy(buf, value, strlen(value) + 1);
    return 0;
}

#endif
