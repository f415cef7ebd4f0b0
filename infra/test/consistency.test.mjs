// The Terraform in infra/ against what the Rust code reads. The Rust side is the source of
// truth: `cargo run -p platform --example print-infra-contract` prints the table's key, index
// and TTL names and each function's environment from the constants the code uses
// (lambdas/platform-store/src/table.rs, lambdas/platform/src/env.rs); the HCL side is infra/*.tf parsed with
// @cdktf/hcl2json (Terraform's own HCL parser, compiled to wasm). Renaming a key, an index, the
// TTL attribute or an environment variable on either side fails here.
//
// INFRA_CONTRACT=<file> reads the contract from a file instead of running cargo.

import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { parse } from "@cdktf/hcl2json";

const INFRA = join(dirname(fileURLToPath(import.meta.url)), "..");
const ROOT = join(INFRA, "..");

function loadContract() {
  const text = process.env.INFRA_CONTRACT
    ? readFileSync(process.env.INFRA_CONTRACT, "utf8")
    : execFileSync(
        "cargo",
        ["run", "--quiet", "--locked", "-p", "platform", "--example", "print-infra-contract"],
        { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] },
      );
  return JSON.parse(text);
}

// All infra/*.tf files merged into one document: { resource: { type: { name: [body] } },
// data: ..., locals: [ {...}, ... ], variable: ..., output: ... }.
async function loadHcl() {
  const merged = { resource: {}, data: {}, locals: {}, variable: {}, output: {} };
  const files = readdirSync(INFRA).filter((f) => f.endsWith(".tf")).sort();
  assert.ok(files.length > 0, "no .tf files in infra/");
  for (const f of files) {
    const doc = await parse(f, readFileSync(join(INFRA, f), "utf8"));
    for (const [kind, byType] of Object.entries(doc.resource ?? {})) {
      for (const [name, bodies] of Object.entries(byType)) {
        (merged.resource[kind] ??= {})[name] = bodies[0];
      }
    }
    for (const [kind, byType] of Object.entries(doc.data ?? {})) {
      for (const [name, bodies] of Object.entries(byType)) {
        (merged.data[kind] ??= {})[name] = bodies[0];
      }
    }
    for (const block of doc.locals ?? []) {
      for (const [k, v] of Object.entries(block)) {
        assert.ok(!(k in merged.locals), `local.${k} is defined twice`);
        merged.locals[k] = v;
      }
    }
    for (const [k, v] of Object.entries(doc.variable ?? {})) merged.variable[k] = v[0];
    for (const [k, v] of Object.entries(doc.output ?? {})) merged.output[k] = v[0];
  }
  return merged;
}

const contract = loadContract();
const hcl = await loadHcl();

function resource(kind, name) {
  const r = hcl.resource[kind]?.[name];
  assert.ok(r, `infra/ has no resource ${kind}.${name}`);
  return r;
}

const sorted = (xs) => [...xs].sort();

// The crates whose code the functions run (lambdas/<crate>/src, every module below it).
const FUNCTION_CRATES = [
  "platform",
  "platform-domain",
  "platform-store",
  "platform-exec",
  "platform-http",
  "catalog-core",
  "api",
  "jobs",
];

function* rustSources(crate) {
  const walk = function* (dir) {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) yield* walk(p);
      else if (e.name.endsWith(".rs")) yield p;
    }
  };
  yield* walk(join(ROOT, "lambdas", crate, "src"));
}

test("the table's keys and attribute types are the code's", () => {
  const t = resource("aws_dynamodb_table", "platform");
  const c = contract.table;
  assert.equal(t.hash_key, c.partition_key);
  assert.equal(t.range_key, c.sort_key);
  assert.equal(t.billing_mode, c.billing_mode);
  const keyNames = [c.partition_key, c.sort_key];
  for (const g of c.global_secondary_indexes) keyNames.push(g.partition_key, g.sort_key);
  // DynamoDB refuses attribute definitions that no key uses, so the sets must be equal.
  assert.deepEqual(sorted(t.attribute.map((a) => a.name)), sorted(new Set(keyNames)));
  for (const a of t.attribute) assert.equal(a.type, c.attribute_type, `attribute ${a.name}`);
});

test("the global secondary indexes match by name, keys and projection", () => {
  const t = resource("aws_dynamodb_table", "platform");
  const got = (t.global_secondary_index ?? []).map((g) => ({
    name: g.name,
    partition_key: g.hash_key,
    sort_key: g.range_key,
    projection: g.projection_type,
  }));
  const want = contract.table.global_secondary_indexes.map((g) => ({
    name: g.name,
    partition_key: g.partition_key,
    sort_key: g.sort_key,
    projection: g.projection,
  }));
  const byName = (a, b) => a.name.localeCompare(b.name);
  assert.deepEqual(got.sort(byName), want.sort(byName));
});

test("TTL is enabled on the code's TTL attribute", () => {
  const t = resource("aws_dynamodb_table", "platform");
  assert.equal(t.ttl?.length, 1);
  assert.equal(t.ttl[0].attribute_name, contract.table.ttl_attribute);
  assert.equal(t.ttl[0].enabled, true);
});

test("the table has point-in-time recovery and a customer-managed key", () => {
  const t = resource("aws_dynamodb_table", "platform");
  assert.equal(t.point_in_time_recovery?.[0]?.enabled, true);
  assert.equal(t.server_side_encryption?.[0]?.enabled, true);
  assert.match(t.server_side_encryption[0].kms_key_arn, /^\$\{aws_kms_key\.\w+\.arn\}$/);
});

// Each function's environment is `local.<fn>_environment` (always set) plus, for optional
// variables, `local.<fn>_optional_environment` (set only when given).
for (const [fn, spec] of Object.entries(contract.functions)) {
  test(`the ${fn} function's environment is exactly what the code reads`, () => {
    const f = resource("aws_lambda_function", fn);
    const vars = f.environment?.[0]?.variables;
    assert.equal(typeof vars, "string", `${fn}: environment.variables must come from locals`);
    assert.ok(vars.includes(`local.${fn}_environment`), `${fn}: uses local.${fn}_environment`);

    const always = hcl.locals[`${fn}_environment`];
    assert.ok(always, `local.${fn}_environment is missing`);
    const optional = hcl.locals[`${fn}_optional_environment`] ?? {};
    if (Object.keys(optional).length > 0) {
      assert.ok(vars.includes(`local.${fn}_optional_environment`), `${fn}: uses the optional locals`);
    }
    assert.deepEqual(sorted(Object.keys(optional)), sorted(spec.optional_env), `${fn}: optional variables`);
    assert.deepEqual(
      sorted([...Object.keys(always), ...Object.keys(optional)]),
      sorted(spec.env),
      `${fn}: variables set by Terraform vs read by the code`,
    );
    for (const name of contract.local_only_env) {
      assert.ok(!(name in always) && !(name in optional), `${fn}: ${name} is for local use only`);
    }
    assert.equal(
      always[contract.table_name_var],
      "${aws_dynamodb_table.platform.name}",
      `${fn}: ${contract.table_name_var} names the platform table`,
    );
  });
}

// The DynamoDB actions the roles allow, against the SDK calls in the Rust source. Admin-only
// calls (create_table, describe_table, update_time_to_live: `api admin create-table`, run with
// an operator's credentials) are not the functions' business.
const SDK_TO_IAM = {
  get_item: ["dynamodb:GetItem"],
  put_item: ["dynamodb:PutItem"],
  update_item: ["dynamodb:UpdateItem"],
  delete_item: ["dynamodb:DeleteItem"],
  query: ["dynamodb:Query"],
  scan: ["dynamodb:Scan"],
  batch_get_item: ["dynamodb:BatchGetItem"],
  batch_write_item: ["dynamodb:BatchWriteItem"],
  transact_get_items: ["dynamodb:GetItem"],
  transact_write_items: [], // authorised per item action, found below
};
const TRANSACT_ITEM_TO_IAM = {
  put: "dynamodb:PutItem",
  update: "dynamodb:UpdateItem",
  delete: "dynamodb:DeleteItem",
  condition_check: "dynamodb:ConditionCheckItem",
};

function actionsUsedByCode() {
  const actions = new Set();
  let usesIndex = false;
  for (const crate of FUNCTION_CRATES) {
    for (const f of rustSources(crate)) {
      let src = readFileSync(f, "utf8");
      if (!src.includes("aws_sdk_dynamodb")) continue;
      src = src.split("#[cfg(test)]")[0]; // unit tests sit at the end of a file
      for (const [call, iam] of Object.entries(SDK_TO_IAM)) {
        if (new RegExp(`\\.${call}\\(\\)`).test(src)) iam.forEach((a) => actions.add(a));
      }
      for (const m of src.matchAll(/TransactWriteItem::builder\(\)\s*\.(\w+)\(/g)) {
        assert.ok(m[1] in TRANSACT_ITEM_TO_IAM, `unknown transaction item kind ${m[1]} in ${f}`);
        actions.add(TRANSACT_ITEM_TO_IAM[m[1]]);
      }
      if (/\.index_name\(/.test(src) && /\.query\(\)/.test(src)) usesIndex = true;
    }
  }
  return { actions: sorted(actions), usesIndex };
}

test("the roles allow exactly the DynamoDB actions the code calls, on the table and its index", () => {
  const { actions, usesIndex } = actionsUsedByCode();
  assert.ok(actions.length > 0, "found no DynamoDB calls in lambdas/*/src");
  assert.deepEqual(sorted(hcl.locals.table_actions), actions);
  assert.deepEqual(hcl.locals.index_actions, usesIndex ? ["dynamodb:Query"] : []);
  for (const fn of Object.keys(contract.functions)) {
    const doc = hcl.data.aws_iam_policy_document?.[fn];
    assert.ok(doc, `no policy document for ${fn}`);
    const ddb = doc.statement.filter((s) => String(s.actions).includes("table_actions") || String(s.actions).includes("index_actions"));
    const resources = ddb.flatMap((s) => s.resources);
    const indexArns = contract.table.global_secondary_indexes.map(
      (g) => `\${aws_dynamodb_table.platform.arn}/index/${g.name}`,
    );
    assert.deepEqual(sorted(resources), sorted(["${aws_dynamodb_table.platform.arn}", ...indexArns]), `${fn}: table and index ARNs only`);
  }
});

test("the access log never contains the request path (it may carry an API key)", () => {
  const stage = resource("aws_apigatewayv2_stage", "default");
  const format = stage.access_log_settings[0].format;
  assert.ok(format.includes("$context.routeKey"), "logs the route template");
  for (const leak of ["$context.path", "$context.http.path", "$context.resourcePath", "$context.requestOverride"]) {
    assert.ok(!format.includes(leak), `access log format must not contain ${leak}`);
  }
  const routes = hcl.locals.route_keys;
  assert.ok(String(routes).includes("ANY /mcp/k/{key}"), "the path-key MCP route exists");
});

// The contract above lists the names in env.rs; it only holds if the code reads nothing by a
// literal name behind its back.
test("the functions read environment variables only through named constants", () => {
  const offenders = [];
  for (const crate of FUNCTION_CRATES) {
    for (const f of rustSources(crate)) {
      const src = readFileSync(f, "utf8").split("#[cfg(test)]")[0];
      for (const m of src.matchAll(/env::var(?:_os)?\(\s*"([^"]+)"|try_from_default_env|from_default_env/g)) {
        offenders.push(`${f.slice(ROOT.length + 1)}: ${m[0]}`);
      }
    }
  }
  assert.deepEqual(offenders, [], "use a constant from platform::env (and list it there)");
});
