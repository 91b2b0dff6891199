/* Parameters passed by value that C may pass invalid, from C, through the
 * header callgate generates from the fixture (tests/fixture, `values`
 * module): the `Turn` (`int32_t`) and `Tier` (`uint8_t`) enums, which the
 * header defines with their constants (`TURN_BACK` …), are checked
 * against their variants at every call, and the `Pair` struct goes both
 * ways by value.
 *
 * Compiled by the test (tests/hosts/values.rs) once the library exists, like
 * data.c. Prints `checks=N` and `result=ok`; a failed check prints
 * `FAIL: file:line: message` on stderr and exits 1. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "check.h"

#define EXPECT_ERROR(expected)                                                        \
    CHECK(strcmp(last_error(), (expected)) == 0, "last error \"%s\", expected \"%s\"", \
          last_error(), (expected))

#define EXPECT_NO_ERROR() CHECK(fixture_last_error_length() == 0, "unexpected error: %s", last_error())

/* Every variant arrives as itself, named by the header's constants. */
static void valid_values(void) {
    static const Turn turns[] = {TURN_BACK, TURN_LEFT, TURN_AHEAD, TURN_RIGHT, TURN_AROUND};
    fixture_clear_last_error();
    for (int i = 0; i < 5; i++) {
        CHECK(fixture_turn_index(turns[i]) == i + 1, "turn %d", (int)turns[i]);
    }
    CHECK(fixture_tier_index(4, 1) == 41, "tier 1");
    CHECK(fixture_tier_index(4, 2) == 42, "tier 2");
    CHECK(fixture_tier_index(4, 200) == 43, "tier 200");
    EXPECT_NO_ERROR();
}

/* Anything else returns the fallback, with a last error naming the
 * argument and the value. */
static void invalid_values(void) {
    static const Turn turns[] = {7, -1, 1, 89, 91, -179, 180, 271, INT_MIN, INT_MAX};
    char expected[256];
    for (size_t i = 0; i < sizeof turns / sizeof turns[0]; i++) {
        fixture_clear_last_error();
        CHECK(fixture_turn_index(turns[i]) == -1, "turn %d", (int)turns[i]);
        snprintf(expected, sizeof expected,
                 "argument `turn` is %d, which is not a `Turn` (expected -180, -90, 0, 90 or 270)",
                 (int)turns[i]);
        EXPECT_ERROR(expected);
    }
    static const Tier tiers[] = {0, 3, 199, 201, 255};
    for (size_t i = 0; i < sizeof tiers / sizeof tiers[0]; i++) {
        fixture_clear_last_error();
        CHECK(fixture_tier_index(4, tiers[i]) == -1, "tier %d", (int)tiers[i]);
        snprintf(expected, sizeof expected,
                 "argument `tier` is %d, which is not a `Tier` (expected 1, 2 or 200)",
                 (int)tiers[i]);
        EXPECT_ERROR(expected);
    }
    /* A valid call after failures succeeds and leaves the last error alone. */
    CHECK(fixture_turn_index(-90) == 2, "turn -90 after failures");
}

/* A struct by value, both ways. */
static void structs(void) {
    fixture_clear_last_error();
    Pair pair = {.a = 3, .b = INT64_MAX};
    Pair swapped = fixture_pair_swap(pair);
    CHECK(swapped.a == INT64_MAX && swapped.b == INT64_MIN + 2, "swapped (%lld, %lld)",
          (long long)swapped.a, (long long)swapped.b);
    Pair back = fixture_pair_swap((Pair){.a = -5, .b = 12});
    CHECK(back.a == 12 && back.b == 7, "swapped (%lld, %lld)", (long long)back.a,
          (long long)back.b);
    EXPECT_NO_ERROR();
}

int main(void) {
    valid_values();
    invalid_values();
    structs();
    printf("checks=%d\nresult=ok\n", checks);
    return 0;
}
