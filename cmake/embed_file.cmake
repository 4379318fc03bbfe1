# Writes OUT: a C file embedding the file IN as `const char NAME[]` (with a
# NUL after its bytes) and `const size_t NAME_len`.
file(READ "${IN}" hex HEX)
string(LENGTH "${hex}" hexlen)
math(EXPR len "${hexlen} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
set(body "/* Generated from ${IN} by cmake/embed_file.cmake. */\n#include <stddef.h>\n\n")
string(APPEND body "extern const char ${NAME}[];\nextern const size_t ${NAME}_len;\n")
string(APPEND body "const char ${NAME}[] = {${bytes} 0};\nconst size_t ${NAME}_len = ${len};\n")
file(WRITE "${OUT}.tmp" "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
