/* The `shapes` example from C. Built against the installed library with
 *
 *     cc -std=c11 -Wall -Wextra -Werror -pedantic demo.c $(pkg-config --cflags --libs shapes)
 *
 * and nothing else: the header defines every type the library takes. */

#define _GNU_SOURCE /* qsort_r */
#include <shapes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define CHECK(condition)                                                   \
    do {                                                                   \
        if (!(condition)) {                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__,         \
                    __LINE__, #condition);                                 \
            failures++;                                                    \
        }                                                                  \
    } while (0)

static const char *fill_name(Fill fill) {
    switch (fill) {
    case FILL_NONE:
        return "none";
    case FILL_SOLID:
        return "solid";
    case FILL_HATCHED:
        return "hatched";
    default:
        return "?";
    }
}

int main(void) {
    /* Nested structs, by value. */
    Rect rects[3] = {
        {{0.0, 0.0}, {2.0, 3.0}},
        {{1.0, 1.0}, {2.0, 2.0}},
        {{0.0, 0.0}, {4.0, 4.0}},
    };
    Rect backwards = {{2.0, 2.0}, {0.0, 0.0}};
    Order order = {-1};
    char message[256];
    char *text;
    Rect *grid;
    size_t count = 0;

    CHECK(shapes_area(rects[0]) == 6.0);
    CHECK(shapes_area(backwards) == -1.0);

    /* The typed comparator, given to glibc's qsort_r as it is. */
    qsort_r(rects, 3, sizeof rects[0], shapes_compare_area, &order);
    CHECK(shapes_area(rects[0]) == 16.0);
    CHECK(shapes_area(rects[2]) == 1.0);
    order.direction = 1;
    qsort_r(rects, 3, sizeof rects[0], shapes_compare_area, &order);
    CHECK(shapes_area(rects[0]) == 1.0);

    /* An enum by value, and an owned string. */
    text = shapes_describe(&rects[1], FILL_HATCHED);
    CHECK(text != NULL && strcmp(text, "a hatched 2 by 3 rectangle at (0, 0)") == 0);
    printf("%s (%s)\n", text ? text : "NULL", fill_name(FILL_HATCHED));
    shapes_string_free(text);

    /* A value that is no `Fill`: NULL, and the last error says why. */
    CHECK(shapes_describe(&rects[1], (Fill)7) == NULL);
    CHECK(shapes_last_error_message(message, sizeof message) > 0);
    CHECK(strstr(message, "which is not a `Fill`") != NULL);

    /* An owned array and its length. */
    grid = shapes_grid(3, 2, 0.5, &count);
    CHECK(grid != NULL && count == 6);
    if (grid != NULL && count == 6) {
        CHECK(grid[5].max.x == 1.5 && grid[5].max.y == 1.0);
    }
    shapes_rects_free(grid, count);
    CHECK(shapes_grid(1, 1, -1.0, &count) == NULL && count == 0);

    if (failures != 0) {
        return 1;
    }
    printf("shapes from C: ok\n");
    return 0;
}
