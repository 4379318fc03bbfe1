-- sanitize_spec.lua: the default sanitizer (lua/pawl/sanitize.lua), case
-- by case: every shape of secret it removes, with ordinary text beside it
-- that must come through unchanged.
local sanitize = require "pawl.sanitize"

local R = sanitize.REDACTED

local function clean(s) return sanitize.default(s) end

-- { input, expected output } pairs.
local function check(cases)
  for _, c in ipairs(cases) do
    assert.are.equal(c[2], clean(c[1]), ("input: %q"):format(c[1]))
  end
end

-- Ordinary text: comes out as it went in.
local function survives(list)
  for _, s in ipairs(list) do
    assert.are.equal(s, clean(s), ("input: %q"):format(s))
  end
end

describe("pawl.sanitize.default", function()
  describe("key=value pairs", function()
    it("redacts unquoted values of secret keys", function()
      check {
        { "login failed: password=hunter2 for ada", "login failed: password=" .. R .. " for ada" },
        { "PASSWORD: hunter2", "PASSWORD: " .. R },
        { "passwd=x pwd=y", "passwd=" .. R .. " pwd=" .. R },
        { "token=abc&next=1", "token=" .. R .. "&next=1" },
        { "secret = s3cr3t;", "secret = " .. R .. ";" },
        { "access_token=a refresh_token=b", "access_token=" .. R .. " refresh_token=" .. R },
        { "client_secret=cs", "client_secret=" .. R },
        { "api_key=k apikey=k2", "api_key=" .. R .. " apikey=" .. R },
        { "jwt=eyJhbGciOi.x.y", "jwt=" .. R },
        { "auth=user:pw", "auth=" .. R },
        { "credentials=abc", "credentials=" .. R },
        { "passphrase: open sesame", "passphrase: " .. R .. " sesame" },
      }
    end)

    it("redacts secret_key=, pass= and aws_secret_access_key=", function()
      check {
        { "secret_key=abc123", "secret_key=" .. R },
        { "pass=hunter2", "pass=" .. R },
        { "db_pass: hunter2", "db_pass: " .. R },
        { "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
          "aws_secret_access_key=" .. R },
        { "AWS_SECRET_ACCESS_KEY = wJalrXUtnFEMI", "AWS_SECRET_ACCESS_KEY = " .. R },
        { "access_key=AK1", "access_key=" .. R },
        { "private_key=pk", "private_key=" .. R },
      }
    end)

    it("knows keys in kebab-case, dotted names, camelCase and prefixes", function()
      check {
        { "X-Api-Key: abcdef", "X-Api-Key: " .. R },
        { "api-key: zzz", "api-key: " .. R },
        { "x-auth-token: t", "x-auth-token: " .. R },
        { "spring.datasource.password=pw", "spring.datasource.password=" .. R },
        { "DB_PASSWORD=pw MYSQL_PWD=pw2", "DB_PASSWORD=" .. R .. " MYSQL_PWD=" .. R },
        { "apiKey=1 accessToken: 2 clientSecret=3 secretAccessKey=4",
          "apiKey=" .. R .. " accessToken: " .. R .. " clientSecret=" .. R
          .. " secretAccessKey=" .. R },
        { "--password=pw", "--password=" .. R },
      }
    end)

    it("redacts quoted values, spaces and all", function()
      check {
        { 'password="a b" next', 'password="' .. R .. '" next' },
        { "password='x' next", "password='" .. R .. "' next" },
        { "token = \"with \\\" quote\" after", 'token = "' .. R .. '" after' },
        { 'password="never closed', 'password="' .. R },
      }
    end)

    it("redacts JSON and Lua-table style pairs", function()
      check {
        { '{"password":"x","user":"ada"}', '{"password":"' .. R .. '","user":"ada"}' },
        { '{"password": "a\\"b", "n": 1}', '{"password": "' .. R .. '", "n": 1}' },
        { '{"token": 12345}', '{"token": ' .. R .. "}" },
        { "{'secret': 'x'}", "{'secret': '" .. R .. "'}" },
        { '{"msg":"password=\\"abc\\""}', '{"msg":"password=\\"' .. R .. '\\""}' },
      }
    end)

    it("redacts Authorization, Cookie and Set-Cookie to the end of the line", function()
      check {
        { "Authorization: Basic dXNlcjpwYXNz\nnext line", "Authorization: " .. R .. "\nnext line" },
        { "proxy-authorization=Digest a, b", "proxy-authorization=" .. R },
        { "Cookie: session=abc; theme=dark\r\nHost: x", "Cookie: " .. R .. "\r\nHost: x" },
        { "Set-Cookie: sid=1; Path=/; HttpOnly", "Set-Cookie: " .. R },
      }
    end)

    it("leaves ordinary pairs and words alone", function()
      survives {
        "test pass: 3 of 5",
        "bypass=1 compass: north",
        "tokens: 5, token_count=7",
        "unexpected token: }",
        "user=ada queue=mail attempt=3",
        "keyboard: us; monkey=1; key=value",
        "password_hash=abc", -- a hash is not the password
        "12:30:45 done",
        "https://example.com:8080/path?q=1",
        "see http://a:b and c@d",
        "ada@example.com wrote: hello",
        "the secret of success",
        "passwords must be long",
      }
    end)
  end)

  describe("URLs", function()
    it("redacts the password of user:password@", function()
      check {
        { "postgres://app:s3cr3t@db:5432/jobs", "postgres://app:" .. R .. "@db:5432/jobs" },
        { "dial redis://:pw@cache:6379/0 failed", "dial redis://:" .. R .. "@cache:6379/0 failed" },
        { "postgres://u:p@ss@h/db", "postgres://u:" .. R .. "@h/db" },
        { "amqp://guest:guest@mq", "amqp://guest:" .. R .. "@mq" },
        { '{"url":"https://u:p@h","b":"x@y"}', '{"url":"https://u:' .. R .. '@h","b":"x@y"}' },
      }
    end)

    it("leaves URLs without a password alone", function()
      survives {
        "https://example.com/a@b",
        "ssh://git@github.com/x.git",
        "http://[::1]:8080/",
        "file:///etc/hosts",
      }
    end)
  end)

  describe("tokens with a known shape", function()
    it("redacts bearer tokens", function()
      check {
        { "got 401 with Bearer abc.def-ghi_jkl", "got 401 with Bearer " .. R },
        { "bearer   xyz12345==", "bearer   " .. R },
      }
      survives { "the bearer of bad news" }
    end)

    it("redacts PEM private key blocks", function()
      local pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\nabc=\n"
                  .. "-----END RSA PRIVATE KEY-----"
      check {
        { "key: " .. pem .. "\nafter",
          "key: -----BEGIN RSA PRIVATE KEY-----" .. R .. "-----END RSA PRIVATE KEY-----\nafter" },
        { "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----",
          "-----BEGIN PRIVATE KEY-----" .. R .. "-----END PRIVATE KEY-----" },
        { "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----",
          "-----BEGIN OPENSSH PRIVATE KEY-----" .. R .. "-----END OPENSSH PRIVATE KEY-----" },
        { "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIF\n(cut off)",
          "-----BEGIN ENCRYPTED PRIVATE KEY-----" .. R },
      }
      survives {
        "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
        "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
      }
    end)

    it("redacts AWS access key ids", function()
      check {
        { "key AKIAIOSFODNN7EXAMPLE denied", "key " .. R .. " denied" },
        { "ASIAY34FZKBOKMUTVV7A", R },
      }
      survives { "AKIA is a prefix", "AKIAIOSFODNN7EXAMPLEX1", "xAKIAIOSFODNN7EXAMPLE" }
    end)

    it("redacts GitHub tokens", function()
      local body = ("a1B2c3D4e5"):rep(4)
      for _, prefix in ipairs { "ghp_", "gho_", "ghu_", "ghs_", "ghr_" } do
        check { { "token " .. prefix .. body .. " used", "token " .. R .. " used" } }
      end
      check { { "github_pat_11ABC_def" .. body, R } }
      survives { "ghp_short", "the ghp_ prefix", "high_five", "ghx_" .. body }
    end)

    it("redacts Stripe keys", function()
      check {
        { "sk_live_4eC39HqLyjWDarjtT1zdp7dc", R },
        { "rk_live_abc123 and sk_test_xyz", R .. " and " .. R },
        { "whsec_abcdef", R },
        -- as long as the marker, with a pair after it
        { "rk_live_x1 password=pw", R .. " password=" .. R },
      }
      survives { "pk_live_public", "desk_live_show", "sk_live" }
    end)

    it("redacts Slack tokens", function()
      check {
        { "xoxb-123456-789-abcDEF", R },
        { "xoxp-1-2-3 xoxa-1 xoxr-1 xoxs-1", R .. " " .. R .. " " .. R .. " " .. R },
        { "xapp-1-A0-abc", R },
      }
      survives { "xox is a word", "xoxo-hugs", "boxoxb-1" }
    end)
  end)

  describe("cutting", function()
    it("cuts to the limit without splitting a UTF-8 character", function()
      local s = ("é"):rep(2000)
      local out = clean(s)
      assert.is_true(#out <= sanitize.max_length)
      assert.is_truthy(out:find("...[truncated]", 1, true))
      assert.is_nil(out:sub(1, -#"...[truncated]" - 1):find("[\192-\255]$"))
    end)

    it("looks far enough past the limit that redaction does not uncover secrets", function()
      -- A huge redacted value first: the text after it moves into view
      -- and is sanitized too.
      local s = "password=" .. ("x"):rep(5000) .. " then token=abc"
      assert.are.equal("password=" .. R .. " then token=" .. R, clean(s))
    end)

    it("drops a secret the pre-cut went through", function()
      -- The message is cut before the patterns run; the URL's @ is past
      -- the cut, so its password would escape the URL pattern.
      local limit = math.max(sanitize.max_length * 8, 4096)
      local filler = ("password=" .. ("y"):rep(990) .. " "):rep(math.ceil(limit / 1000))
      filler = filler:sub(1, limit - 20) -- the cut leaves " postgres://u:topsec"
      local s = filler .. " postgres://u:topsecretpw@host/db"
      assert.is_true(#s > limit)
      local out = clean(s)
      assert.is_true(#out < sanitize.max_length) -- the end is in view
      assert.is_nil(out:find("topsec", 1, true), out)
      assert.is_truthy(out:find("...[truncated]", 1, true))
    end)

    it("takes time linear in the text", function()
      -- Runs of word characters with no separator: a quadratic pattern
      -- would take minutes here; these take milliseconds.
      for _, s in ipairs { ("a"):rep(20000), ("a-"):rep(10000), ("a."):rep(10000),
                           ("a:"):rep(10000), ("://"):rep(5000), ("-----BEGIN "):rep(2000) } do
        local out = clean(s)
        assert.is_true(#out <= sanitize.max_length)
      end
    end)
  end)

  describe("secret_key", function()
    it("tells field names that look secret", function()
      for _, k in ipairs { "password", "Password", "db_password", "apiKey", "api-key",
                           "X-Api-Key", "token", "access_token", "secret", "cookie",
                           "authorization", "aws_secret_access_key", "pass", "pwd" } do
        assert.is_true(sanitize.secret_key(k), k)
      end
      for _, k in ipairs { "user", "tokens", "key", "monkey", "passwords_count",
                           "password_hash", "bypass", "id", "" } do
        assert.is_false(sanitize.secret_key(k), k)
      end
      assert.is_false(sanitize.secret_key(1))
    end)
  end)
end)
