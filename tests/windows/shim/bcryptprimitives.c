/* A stand-in for Windows' bcryptprimitives.dll, which wine 8.0 lacks: Rust's
 * std imports `ProcessPrng` from it for its random keys, so no Rust-built
 * .exe or .dll loads under that wine without it. `ProcessPrng` fills the
 * buffer from `RtlGenRandom` (exported by advapi32 as SystemFunction036).
 * Used only to run the Windows tests under wine; never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
