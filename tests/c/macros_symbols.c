/* Calls a #[c_callback(export = "...")] function by its symbol name, as C
 * linked against a Rust staticlib would. */
#include <stdint.h>

int32_t macros_renamed_export(int32_t value);
int32_t m_call_renamed_export(int32_t value);

int32_t m_call_renamed_export(int32_t value) {
    return macros_renamed_export(value);
}
