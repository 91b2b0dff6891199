// The benchmark's callback in Go, built by callgate-bench as a c-shared
// library and called from the same C threads as callgate's callbacks: the
// cgo side of the comparison.
package main

/*
#include <stdint.h>
*/
import "C"

// go_bench_add returns x + 1, like every callback of the benchmark.
//
//export go_bench_add
func go_bench_add(x C.int32_t) C.int32_t {
	return x + 1
}

// A c-shared library needs a main package; main itself never runs.
func main() {}
