/* Links against the fixture DLL through the header callgate-header wrote
 * from it (`__cdecl` prototypes imported with `__declspec(dllimport)`):
 * the header reader works on a PE DLL, and what it declares is what the
 * DLL exports.
 *
 *   linked */
#include <stdio.h>
#include <string.h>

#include "callgate_fixture.h"

int main(void) {
    if (fixture_plain(41) != 42) {
        fprintf(stderr, "FAIL: fixture_plain(41) != 42\n");
        return 1;
    }
    fixture_plain_fn through_pointer = fixture_plain;
    if (through_pointer(1) != 2) {
        fprintf(stderr, "FAIL: through the pointer type\n");
        return 1;
    }
    if (fixture_fail(3) != -1 || fixture_last_error_length() != strlen("asked to fail with 3") + 1) {
        fprintf(stderr, "FAIL: the last-error API through the import library\n");
        return 1;
    }
    puts("ok");
    return 0;
}
