-- layout_spec.lua: the layout's rules hold (docs/internals.md, "Layout"):
-- who may include what (spec/functional/layout_check.sh), which layer's
-- symbols each layer's objects use (spec/functional/layer_link_check.sh),
-- the names libpawl gives
-- the linker (spec/functional/symbols_check.sh), and the CLI written on the
-- public API only, proved by a build of it linked against libpawl.so
-- (pawl_cli_shared). Each check is also shown to refuse what it is there
-- to refuse.
local H = require "cli_helper"

local q = H.quote
local SRC = assert(os.getenv("PAWL_SOURCE_DIR"), "PAWL_SOURCE_DIR")
local BUILD = assert(os.getenv("PAWL_BUILD_DIR"), "PAWL_BUILD_DIR")
local CLI_SHARED = assert(os.getenv("PAWL_CLI_SHARED"), "PAWL_CLI_SHARED")

-- Runs a shell command; returns its output (stdout and stderr) and status.
local function run(cmd)
  local f = os.tmpname()
  local out = H.capture("{ " .. cmd .. "; echo $? >" .. q(f) .. "; } 2>&1")
  local code = tonumber((H.read_file(f) or ""):match("%d+"))
  os.remove(f)
  return out, code
end

-- Inserts `line` after the first line of `path` that equals `after`.
local function insert_after(path, after, line)
  local text = assert(H.read_file(path), path)
  local s, e = text:find("\n" .. after:gsub("%p", "%%%0") .. "\n")
  assert(s, ("%s has no line %q"):format(path, after))
  H.write_file(path, text:sub(1, e) .. line .. "\n" .. text:sub(e + 1))
end

describe("the layout", function()
  local env

  before_each(function() env = H.env() end)
  after_each(function() env:cleanup() end)

  describe("#include rules", function()
    it("hold in the tree", function()
      local out, code = run("sh " .. q(SRC .. "/spec/functional/layout_check.sh") .. " " .. q(SRC))
      assert.are.equal("", out)
      assert.are.equal(0, code)
    end)

    it("are refused when broken, one line per broken include", function()
      local tree = env:path("tree")
      assert.is_true(H.sh("mkdir " .. q(tree) .. " " .. q(tree .. "/bench")))
      assert.is_true(H.sh("cp -r " .. q(SRC .. "/include") .. " " .. q(SRC .. "/host") ..
                          " " .. q(SRC .. "/stores") .. " " .. q(tree)))
      assert.is_true(H.sh("cp " .. q(SRC .. "/bench/cli_bench.c") .. " " .. q(tree .. "/bench")))
      local cases = {
        -- file, a line it has, what to include after it, the rule named
        { "stores/sqlite/claim.c", '#include "sqlite_int.h"', '#include "pawl_internal.h"',
          "stores/ use core/ only" },
        { "stores/postgres/claim.c", '#include "pg_int.h"', '#include "sqlite_sql.h"',
          "stores/ use core/ only" },
        { "stores/common/plan.c", '#include "store.h"', '#include "pawl_internal.h"',
          "stores/ use core/ only" },
        { "host/cli/cli.c", '#include "cli.h"', '#include "handle.h"',
          "the CLI uses include/pawl.h, core/ and LuaJIT only" },
        { "bench/cli_bench.c", '#include "pawl.h"', '#include "store.h"',
          "the CLI uses include/pawl.h, core/ and LuaJIT only" },
        { "host/api/pawl.c", '#include "handle.h"', '#include "host.h"',
          "api/ uses stores/store.h and core/ only" },
        { "host/api/pawl.c", '#include "handle.h"', '#include "sqlite_sql.h"',
          "api/ uses stores/store.h and core/ only" },
        { "host/runner/poller.c", '#include "clock.h"', '#include "store.h"',
          "runner/ uses api/pawl_internal.h, lua/bridge.h and core/ only" },
        { "host/runner/completer.c", '#include "clock.h"', '#include "handle.h"',
          "runner/ uses api/pawl_internal.h" },
        { "host/runner/worker.c", '#include "clock.h"', "#include <lua.h>",
          "runner/ uses api/pawl_internal.h" },
        { "host/runner/loader.c", '#include "clock.h"', '#include "state.h"',
          "runner/ uses api/pawl_internal.h" },
        { "host/runner/host.c", '#include "clock.h"', '#include "ops.h"',
          "runner/ uses api/pawl_internal.h" },
        { "host/runner/uv_attach.c", '#include "alloc.h"', '#include "http.h"',
          "runner/ uses api/pawl_internal.h" },
        { "host/ops/serve.c", '#include "ops.h"', '#include "store.h"',
          "ops/ uses runner/, api/pawl_internal.h, lua/bridge.h and core/ only" },
        { "host/ops/admin_server.c", '#include "clock.h"', '#include "state.h"',
          "ops/ uses runner/, api/pawl_internal.h, lua/bridge.h and core/ only" },
        { "host/lua/run.c", '#include "state.h"', '#include "worker.h"',
          "lua/ uses core/ and LuaJIT only" },
        { "host/lua/lua_module.c", '#include "ljson.h"', '#include "bridge.h"',
          "the Lua module uses include/pawl.h, core/, lua/ljson.h and its own" },
        { "host/lua/lua_module_admin.c", '#include "lua_module_int.h"', '#include "state.h"',
          "the Lua module uses include/pawl.h, core/, lua/ljson.h and its own" },
        { "host/lua/admin_lua.c", '#include "clock.h"', '#include "lua_module_int.h"',
          "lua/ uses core/ and LuaJIT only" },
        { "host/core/clock.c", '#include "clock.h"', '#include "bridge.h"',
          "core/ uses core/ only" },
      }
      for _, c in ipairs(cases) do insert_after(tree .. "/" .. c[1], c[2], c[3]) end
      local out, code = run("sh " .. q(SRC .. "/spec/functional/layout_check.sh") .. " " .. q(tree))
      assert.are.equal(1, code, out)
      local lines = H.lines(out)
      assert.are.equal(#cases, #lines, out)
      for _, c in ipairs(cases) do
        local inc = c[3]:match("#include (.*)$")
        local hit = false
        for _, l in ipairs(lines) do
          if l:find(c[1] .. ":", 1, true) == 1 and l:find(inc, 1, true) and
             l:find(c[4], 1, true) then
            hit = true
          end
        end
        assert.is_true(hit, ("no line for %s including %s in:\n%s"):format(c[1], inc, out))
      end
    end)
  end)

  describe("the backends' file names", function()
    -- One file per group of the store interface, the same names in
    -- stores/sqlite/ and stores/postgres/; each backend's private header
    -- and the SQL headers the tests include are its own.
    local function tree_copy()
      local tree = env:path("tree")
      assert.is_true(H.sh("mkdir " .. q(tree) .. " && cp -r " .. q(SRC .. "/include") .. " " ..
                          q(SRC .. "/host") .. " " .. q(SRC .. "/stores") .. " " .. q(tree)))
      return tree
    end

    it("are refused when a file has no namesake, naming both sides", function()
      local tree = tree_copy()
      -- A file renamed on one side, and a file added on the other.
      assert.is_true(H.sh("mv " .. q(tree .. "/stores/postgres/claim.c") .. " " ..
                          q(tree .. "/stores/postgres/claiming.c")))
      assert.is_true(H.sh("cp " .. q(tree .. "/stores/sqlite/locks.c") .. " " ..
                          q(tree .. "/stores/sqlite/leases.c")))
      assert.is_true(H.sh("cp " .. q(tree .. "/stores/postgres/pg_int.h") .. " " ..
                          q(tree .. "/stores/postgres/pg_more.h")))
      local out, code = run("sh " .. q(SRC .. "/spec/functional/layout_check.sh") .. " " .. q(tree))
      assert.are.equal(1, code, out)
      local want = {
        "stores/sqlite/claim.c: no stores/postgres/claim.c:",
        "stores/postgres/claiming.c: no stores/sqlite/claiming.c:",
        "stores/sqlite/leases.c: no stores/postgres/leases.c:",
        "stores/postgres/pg_more.h: no stores/sqlite/pg_more.h:",
      }
      local lines = H.lines(out)
      assert.are.equal(#want, #lines, out)
      for _, w in ipairs(want) do
        assert.truthy(out:find(w .. " the backends' files mirror each other", 1, true), out)
      end
    end)

    it("are refused when a whole backend file is gone", function()
      local tree = tree_copy()
      assert.is_true(H.sh("rm " .. q(tree .. "/stores/sqlite/metrics.c")))
      local out, code = run("sh " .. q(SRC .. "/spec/functional/layout_check.sh") .. " " .. q(tree))
      assert.are.equal(1, code, out)
      assert.are.equal(
        "stores/postgres/metrics.c: no stores/sqlite/metrics.c: the backends' files mirror " ..
        "each other (one per group of the store interface)", (out:gsub("\n$", "")))
    end)
  end)

  describe("link-level rules", function()
    -- What each layer's objects (CMake's OBJECT libraries) leave for the
    -- linker must be defined by a layer it may use
    -- (spec/functional/layer_link_check.sh).
    local check = "sh " .. q(SRC .. "/spec/functional/layer_link_check.sh") .. " "

    it("hold in the build", function()
      local out, code = run(check .. q(BUILD .. "/layer_objects.txt"))
      assert.are.equal("", out)
      assert.are.equal(0, code)
    end)

    it("are refused when a layer calls one it may not use, naming the symbol and both layers", function()
      -- The build's list of objects, plus one object per case that calls
      -- what its layer may not.
      local list = env:path("objects.txt")
      local text = assert(H.read_file(BUILD .. "/layer_objects.txt"))
      local cases = {
        -- layer, the symbol called, its layer, what the line says
        { "stores", "pawl__host_wake", "runner/", "stores/ use core/ only" },
        { "core", "pawl_open", "api/", "core/ uses nothing of the other layers" },
        { "api", "pawl__host_wake", "runner/", "api/ uses stores/ and core/ only" },
        { "runner", "pawl__admin_new", "ops/", "runner/ uses api/, lua/ and core/ only" },
        { "runner", "pawl__store_open", "stores/", "runner/ uses api/, lua/ and core/ only" },
        -- lua/ may call the public API of any layer, never an internal name.
        { "luabridge", "pawl__host_wake", "runner/", "lua/ uses core/ and the public API" },
        { "stores", "pawl_limits", "api/", "stores/ use core/ only" },
        { "stores", "pawl__from_store", "api/", "stores/ use core/ only" },
        { "core", "pawl__store_now", "stores/", "core/ uses nothing of the other layers" },
      }
      for i, c in ipairs(cases) do
        local src = ("%s/fake%d.c"):format(env.dir, i)
        H.write_file(src, ("void %s(void);\nvoid pawl__fake%d(void) { %s(); }\n"):format(c[2], i, c[2]))
        local obj = ("%s/fake%d.o"):format(env.dir, i)
        local _, cc = run(("cc -c %s -o %s"):format(q(src), q(obj)))
        assert.are.equal(0, cc)
        text = text .. c[1] .. " " .. obj .. "\n"
      end
      -- Allowed: lua/ calling the public API (ops/'s pawl_start), ops/
      -- calling the engine's internal hooks.
      H.write_file(env.dir .. "/ok1.c", "void pawl_start(void);\nvoid pawl__ok1(void) { pawl_start(); }\n")
      H.write_file(env.dir .. "/ok2.c", "void pawl__host_wake(void);\nvoid pawl__ok2(void) { pawl__host_wake(); }\n")
      local _, cc = run(("cc -c %s -o %s && cc -c %s -o %s"):format(
        q(env.dir .. "/ok1.c"), q(env.dir .. "/ok1.o"),
        q(env.dir .. "/ok2.c"), q(env.dir .. "/ok2.o")))
      assert.are.equal(0, cc)
      text = text .. "luabridge " .. env.dir .. "/ok1.o\nops " .. env.dir .. "/ok2.o\n"
      H.write_file(list, text)
      local out, code = run(check .. q(list))
      assert.are.equal(1, code, out)
      local lines = H.lines(out)
      assert.are.equal(#cases, #lines, out)
      for i, c in ipairs(cases) do
        local hit = false
        for _, l in ipairs(lines) do
          local name = c[1] == "luabridge" and "lua/" or c[1] .. "/"
          if l:find(("%s/fake%d.o: "):format(env.dir, i), 1, true) == 1 and
             l:find(c[2] .. " is defined in " .. c[3], 1, true) and
             l:find("this object is " .. name .. "'s", 1, true) and l:find(c[4], 1, true) then
            hit = true
          end
        end
        assert.is_true(hit, ("no line for case %d (%s calling %s) in:\n%s"):format(i, c[1], c[2], out))
      end
      -- A list that names no object, or one that is not there, is an
      -- error, not a pass.
      H.write_file(list, "")
      out, code = run(check .. q(list))
      assert.are.equal(2, code, out)
      assert.truthy(out:find("names no layer's object", 1, true), out)
      H.write_file(list, "runner " .. env.dir .. "/gone.o\n")
      out, code = run(check .. q(list))
      assert.are.equal(2, code, out)
      assert.truthy(out:find("gone.o (runner, in", 1, true), out)
    end)
  end)

  describe("symbols", function()
    it("of libpawl are pawl_ or pawl__, and libpawl.so exports pawl_ only", function()
      -- The internal archive (what the CLI and the tests link) has every
      -- layer's names as the compiler made them: the naming rule is
      -- checked there. The embedders' libpawl.a makes all but the public
      -- pawl_ names local (example.own_luajit checks that).
      for _, a in ipairs { "libpawl_internal.a", "libpawl.a" } do
        local out, code = run("sh " .. q(SRC .. "/spec/functional/symbols_check.sh") .. " " ..
                              q(BUILD .. "/" .. a) .. " " .. q(BUILD .. "/libpawl.so"))
        assert.are.equal("", out, a)
        assert.are.equal(0, code, a)
      end
      -- The public API is there: a function of each layer that has one.
      local dyn = H.capture("nm -D --defined-only " .. q(BUILD .. "/libpawl.so"))
      for _, f in ipairs({ "pawl_open", "pawl_start", "pawl_script_info", "pawl_job_free" }) do
        assert.truthy(dyn:find(" " .. f .. "\n", 1, true), f)
      end
    end)

    it("without a prefix, or exported when internal, are refused", function()
      local dir = env.dir
      H.write_file(dir .. "/bad.c", table.concat({
        "int log_init(void) { return 0; }",
        '__attribute__((visibility("default"))) int pawl__x(void) { return 1; }',
        "int pawl_ok(void) { return 2; }", "" }, "\n"))
      local _, cc = run("cd " .. q(dir) .. " && cc -c -fPIC bad.c -o bad.o && " ..
                        "ar rcs libbad.a bad.o && cc -shared -o libbad.so bad.o")
      assert.are.equal(0, cc)
      local out, code = run("sh " .. q(SRC .. "/spec/functional/symbols_check.sh") .. " " ..
                            q(dir .. "/libbad.a") .. " " .. q(dir .. "/libbad.so"))
      assert.are.equal(1, code, out)
      assert.truthy(out:find("without the pawl_ or pawl__ prefix:\n  log_init\n", 1, true), out)
      assert.truthy(out:find("not public pawl_ functions:\n  log_init\n  pawl__x\n", 1, true), out)
    end)
  end)

  describe("the CLI against libpawl.so", function()
    -- It links (only what libpawl.so exports, plus core/ statically), and
    -- a story through it works: a command that creates, one that enqueues
    -- through a script, the worker host, and the readers.
    it("uses the public API only, and runs the example story", function()
      local ldd = H.capture("ldd " .. q(CLI_SHARED))
      assert.truthy(ldd:find("libpawl.so.0 => " .. BUILD, 1, true), ldd)
      local bin = H.bin
      H.bin = CLI_SHARED
      local ok, err = pcall(function()
        local scripts = SRC .. "/scripts"
        env:ok("migrate")
        local id = env:enqueue("send_welcome", '{"to":"ada@example.com"}', "--scripts", scripts)
        local r = env:pawl("run", "--scripts", scripts, "--until-idle", "--workers", "1")
        assert.are.equal(0, r.code, r.err)
        local job = env:show_json(id)
        assert.are.equal("succeeded", job.state)
        assert.are.equal("mail", job.queue)
        assert.truthy(env:ok("jobs"):find(id, 1, true))
      end)
      H.bin = bin
      assert(ok, err)
    end)
  end)
end)
