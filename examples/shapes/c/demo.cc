// The `shapes` example from C++, with the owners of `--cxx-owners`: the
// string and the array the library returns free themselves.
//
//     c++ -std=c++17 -Wall -Wextra -Werror demo.cc $(pkg-config --cflags --libs shapes)

#include <shapes.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

static int failures = 0;

static void check(bool condition, const char *what) {
    if (!condition) {
        std::fprintf(stderr, "check failed: %s\n", what);
        failures++;
    }
}

int main() {
    Rect square = {{0.0, 0.0}, {2.0, 2.0}};
    {
        auto text = shapes::shapes_describe(&square, FILL_SOLID);
        check(text != nullptr, "a description");
        std::string described = text ? text.get() : "";
        check(described == "a solid 2 by 2 rectangle at (0, 0)", described.c_str());
    }

    auto grid = shapes::shapes_grid(3, 2, 1.0);
    std::size_t count = grid.get_deleter().len;
    check(grid != nullptr && count == 6, "six squares");
    std::vector<Rect> rects(grid.get(), grid.get() + count);
    rects.push_back(Rect{{0.0, 0.0}, {5.0, 5.0}});
    Order order = {-1};
    std::sort(rects.begin(), rects.end(), [&order](const Rect &a, const Rect &b) {
        return shapes_compare_area(&a, &b, &order) < 0;
    });
    check(shapes_area(rects.front()) == 25.0, "the largest first");

    auto none = shapes::shapes_grid(1, 1, 0.0);
    check(none == nullptr && none.get_deleter().len == 0, "no squares of side 0");

    if (failures != 0) {
        return 1;
    }
    std::printf("shapes from C++: ok\n");
    return 0;
}
