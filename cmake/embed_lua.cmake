# Writes OUT: a C file embedding lua/pawl/*.lua as pawl__lua_modules[], so
# the worker states load the exact Lua side this binary was built with
# (package.preload), wherever the binary runs.
file(GLOB files RELATIVE "${DIR}" "${DIR}/*.lua")
# EXCLUDE: files embedded elsewhere (console.lua: the CLI's console only,
# never compiled into every worker state).
if(EXCLUDE)
  list(REMOVE_ITEM files ${EXCLUDE})
endif()
list(SORT files)
set(body "/* Generated from lua/pawl/ by cmake/embed_lua.cmake. */\n#include <stddef.h>\n\n")
string(APPEND body "typedef struct pawl_lua_module {\n  const char *name;\n  const char *chunkname;\n  const char *src;\n  size_t len;\n} pawl_lua_module_t;\n\n")
set(table "")
set(i 0)
foreach(name IN LISTS files)
  string(REGEX REPLACE "\\.lua$" "" mod "${name}")
  file(READ "${DIR}/${name}" hex HEX)
  string(LENGTH "${hex}" hexlen)
  math(EXPR len "${hexlen} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(APPEND body "static const char lua_m${i}[] = {${bytes} 0};\n")
  string(APPEND table "    {\"pawl.${mod}\", \"@lua/pawl/${name}\", lua_m${i}, ${len}},\n")
  math(EXPR i "${i} + 1")
endforeach()
string(APPEND body "\nextern const pawl_lua_module_t pawl__lua_modules[];\nextern const size_t pawl__lua_module_count;\n")
string(APPEND body "const pawl_lua_module_t pawl__lua_modules[] = {\n${table}};\nconst size_t pawl__lua_module_count = ${i};\n")
file(WRITE "${OUT}.tmp" "${body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
