#!/usr/bin/env bash
# Validates the Kubernetes manifests under deploy/ strictly against the Kubernetes 1.33
# schemas, with kubernetes-validate (PyPI), offline once the package is installed. Needs
# python3 with pip (and venv); no cluster, no container engine.
#
#   bash deploy/validate.sh
#
# What it checks (all of it on every run; exit 1 if anything failed):
#  1. every *.yaml / *.yml under deploy/ parses (no duplicate keys either);
#  2. kustomization.yaml files (not Kubernetes objects, so not schema-checked): the
#     apiVersion and kind, every listed resource and patch exists (a file, or for a
#     resource a directory with a kustomization.yaml), and every other file is listed by
#     some kustomization, as a resource or as a patch. A commented-out `# - path: <file>`
#     line is an opt-in patch (an operator uncomments it): it must exist too;
#  3. every YAML document of every other file except patches (partial objects, checked
#     in step 7 once applied), with `kubernetes-validate --strict -k 1.33.0`: unknown
#     fields are errors, and so is a document whose kind has no 1.33 schema (the tool
#     itself only warns about those);
#  4. the commands.json in the ConfigMap is valid JSON of the expected shape;
#  5. the a2a-commands sidecar is the same in the Deployment and the StatefulSet, and its
#     metrics listener, port named `metrics` and scrape annotations agree;
#  6. the example etcd (fleet/etcd/): --initial-cluster names exactly its replicas under
#     its Service, which is headless and publishes not-ready members, and the members
#     start in parallel (otherwise the cluster never forms);
#  7. if kubectl (or kustomize) is installed: each kustomization renders, also with its
#     opt-in patches enabled, and the rendered objects pass step 3 too. The rendered fleet
#     overlay must run 3 replicas whose sidecar has valid fleet settings
#     (A2A_COMMANDS_FLEET_ETCD_ENDPOINTS, the member name from the pod's name, TLS only
#     with https://, file settings inside a mounted volume), differs from deploy/'s only
#     by them, and, without opt-in patches, names the example etcd's members and keeps
#     to its transaction limits; the gateway container must be deploy/'s, untouched.
#     The rendered front overlay (front/) must send its Service to the sidecar's front
#     port, whose upstream is a port of the agent's container (none of the sidecar's) on
#     the pod's loopback, name only front settings `serve` reads, and mount no Secret in
#     the agent's container.
#     Set SKIP_KUSTOMIZE=1 to skip this step.
#
# The tool is installed into a virtual environment of its own (so the project's other
# Python packages are left alone), kept in $KUBERNETES_VALIDATE_VENV, by default
# ~/.cache/a2a-commands/kubernetes-validate-<version>; later runs reuse it without the
# network. Without a working `python3 -m venv` it falls back to the current python3.
# shellcheck disable=SC2001 # sed over multi-line output reads better here
set -euo pipefail

# 1.37.0 is the newest release; it ships the v1.33.0 (and v1.33.0 strict) schemas
# alongside those of other Kubernetes versions, and needs no network to validate.
KUBERNETES_VALIDATE_VERSION=1.37.0
KUBERNETES_VERSION=1.33.0

deploy_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${KUBERNETES_VALIDATE_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/a2a-commands/kubernetes-validate-$KUBERNETES_VALIDATE_VERSION}"

installed_version() { # python -> the installed kubernetes-validate version, or nothing
  "$1" -c 'import importlib.metadata as m; print(m.version("kubernetes-validate"))' 2>/dev/null || true
}

venv_ok() { [[ -x "$venv/bin/python3" ]] && "$venv/bin/python3" -m pip --version >/dev/null 2>&1; }
python=""
if venv_ok || { python3 -m venv "$venv" >/dev/null 2>&1 && venv_ok; }; then
  python="$venv/bin/python3"
else
  echo "validate.sh: python3 -m venv failed; installing into $(command -v python3) instead" >&2
  python="$(command -v python3)"
fi
if [[ "$(installed_version "$python")" != "$KUBERNETES_VALIDATE_VERSION" ]]; then
  "$python" -m pip install --quiet --disable-pip-version-check \
    "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION"
fi
kv=("$python" -m kubernetes_validate)
echo "kubernetes-validate $("${kv[@]}" --version), Kubernetes $KUBERNETES_VERSION schemas, strict"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

mapfile -t yaml_files < <(cd "$deploy_dir" && find . -type f \( -name '*.yaml' -o -name '*.yml' \) | sed 's|^\./||' | LC_ALL=C sort)
if [[ ${#yaml_files[@]} -eq 0 ]]; then
  echo "FAIL: no YAML files under $deploy_dir" >&2
  exit 1
fi

# Steps 1, 2, 4, 5 and 6. Writes "<file> <number of documents>" for each manifest (not
# kustomization, not patch) file that parsed to $work/manifests, for step 3, each
# kustomization's directory to $work/kustomizations and each one with opt-in patches to
# $work/opt-in, for step 7. A failure here is reported at the end, after the schema
# checks have run too.
failed=0
if ! (cd "$deploy_dir" && "$python" - "$work" "${yaml_files[@]}" <<'PY'); then
import json
import os
import re
import sys

import yaml

work, files = sys.argv[1], sys.argv[2:]
errors = []


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects duplicate mapping keys (PyYAML keeps the last silently,
    kubectl refuses the file)."""


def construct_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)


def is_kustomization(path):
    return os.path.basename(path) in ("kustomization.yaml", "kustomization.yml", "Kustomization")


docs_by_file = {}
for path in files:
    try:
        with open(path, encoding="utf-8") as f:
            docs = [d for d in yaml.load_all(f, Loader=StrictLoader) if d is not None]
    except (OSError, yaml.YAMLError) as e:
        errors.append(f"{path}: does not parse as YAML: {e}")
        continue
    docs_by_file[path] = docs
    if not docs:
        errors.append(f"{path}: holds no YAML document")
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            errors.append(f"{path}: document {i + 1} is not a mapping")
        elif not is_kustomization(path):
            for field in ("apiVersion", "kind"):
                if not isinstance(doc.get(field), str):
                    errors.append(f"{path}: document {i + 1} has no {field}")
            if not isinstance(doc.get("metadata"), dict) or not doc["metadata"].get("name"):
                errors.append(f"{path}: document {i + 1} has no metadata.name")

# Step 2: kustomizations.
listed = set()
patch_files = set()
kustomization_dirs = []
opt_in = []  # (kustomization directory, [opt-in patch paths as written])
# A commented-out patch entry, which an operator enables by uncommenting it.
OPT_IN = re.compile(r"^[ \t]*#[ \t]*-[ \t]*path:[ \t]*(\S+)[ \t]*$", re.M)
for path, docs in docs_by_file.items():
    if not is_kustomization(path):
        continue
    if len(docs) != 1 or not isinstance(docs[0], dict):
        errors.append(f"{path}: a kustomization is one YAML mapping")
        continue
    k = docs[0]
    if k.get("apiVersion") != "kustomize.config.k8s.io/v1beta1" or k.get("kind") != "Kustomization":
        errors.append(f"{path}: expected apiVersion kustomize.config.k8s.io/v1beta1, kind Kustomization")
    root = os.path.dirname(path) or "."
    resources = k.get("resources", [])
    if not isinstance(resources, list) or not resources:
        errors.append(f"{path}: resources must be a non-empty list")
        continue
    if len(set(map(str, resources))) != len(resources):
        errors.append(f"{path}: resources lists an entry twice")
    for entry in resources:
        if not isinstance(entry, str) or "://" in entry:
            errors.append(f"{path}: resource {entry!r} is not a local path")
            continue
        target = os.path.normpath(os.path.join(root, entry))
        if os.path.isdir(target):
            if not any(os.path.isfile(os.path.join(target, n))
                       for n in ("kustomization.yaml", "kustomization.yml", "Kustomization")):
                errors.append(f"{path}: resource {entry!r} is a directory without a kustomization")
        elif os.path.isfile(target):
            # kustomize loads files only from inside the kustomization's own directory.
            if os.path.commonpath([os.path.abspath(root), os.path.abspath(target)]) != os.path.abspath(root):
                errors.append(f"{path}: resource {entry!r} is a file outside this kustomization's "
                              "directory (kustomize refuses it; list a kustomization directory instead)")
            listed.add(target)
        else:
            errors.append(f"{path}: resource {entry!r} does not exist")
    kustomization_dirs.append(root)
    # Patches: files inside this kustomization's directory (kustomize loads nothing
    # outside it), each a partial object that only the rendering in step 7 can check.
    patches = k.get("patches", [])
    merges = k.get("patchesStrategicMerge", [])
    if not isinstance(patches, list) or not isinstance(merges, list):
        errors.append(f"{path}: patches and patchesStrategicMerge must be lists")
        continue
    entries = [p["path"] for p in patches if isinstance(p, dict) and "path" in p]
    entries += [p for p in merges if isinstance(p, str) and "\n" not in p]
    with open(path, encoding="utf-8") as f:
        optional = OPT_IN.findall(f.read())
    if set(entries) & set(optional):
        errors.append(f"{path}: a patch is listed both enabled and commented out")
    if optional:
        opt_in.append((root, optional))
    for entry in entries + optional:
        target = os.path.normpath(os.path.join(root, entry))
        if not os.path.isfile(target):
            errors.append(f"{path}: patch {entry!r} does not exist")
        elif os.path.commonpath([os.path.abspath(root), os.path.abspath(target)]) != os.path.abspath(root):
            errors.append(f"{path}: patch {entry!r} is a file outside this kustomization's directory")
        else:
            patch_files.add(target)

manifests = [p for p in docs_by_file if not is_kustomization(p) and os.path.normpath(p) not in patch_files]
# Written first, so that steps 3 and 7 run on every file that parsed even if a check here
# fails.
with open(os.path.join(work, "manifests"), "w") as out:
    for path in manifests:
        out.write(f"{path} {len(docs_by_file[path])}\n")
with open(os.path.join(work, "kustomizations"), "w") as out:
    for root in sorted(kustomization_dirs):
        out.write(f"{root}\n")
with open(os.path.join(work, "opt-in"), "w") as out:
    for root, optional in sorted(opt_in):
        out.write(f"{root} {','.join(optional)}\n")
for path in manifests:
    if os.path.normpath(path) not in listed:
        errors.append(f"{path}: not listed in any kustomization.yaml resources (or patches)")
for path in sorted(patch_files & listed):
    errors.append(f"{path}: listed both as a resource and as a patch")

# Step 4: the commands file inside the ConfigMap.
NAME = re.compile(r"[a-z][a-z0-9-]*\Z")
for path in manifests:
    for doc in docs_by_file[path]:
        if not (isinstance(doc, dict) and doc.get("kind") == "ConfigMap"):
            continue
        raw = (doc.get("data") or {}).get("commands.json")
        if raw is None:
            continue
        where = f"{path}: ConfigMap {doc['metadata'].get('name')} commands.json"
        try:
            commands = json.loads(raw)["commands"]
        except (ValueError, KeyError, TypeError) as e:
            errors.append(f"{where}: not JSON of the form {{\"commands\": [...]}} ({e})")
            continue
        names = []
        for i, c in enumerate(commands):
            if not isinstance(c, dict):
                errors.append(f"{where}: commands[{i}] is not an object")
                continue
            # The commands file's schema (src/registry/commands_file.rs); `a2a-commands
            # ctl check` checks the rest (lengths, characters, roles, URLs).
            unknown = set(c) - {"name", "description", "argument_hint", "handler", "roles", "hidden"}
            if unknown:
                errors.append(f"{where}: commands[{i}] has unknown keys {sorted(unknown)}")
            if not isinstance(c.get("name"), str) or not NAME.match(c["name"]) or len(c["name"]) > 64:
                errors.append(f"{where}: commands[{i}].name must match [a-z][a-z0-9-]* (at most 64)")
            if not isinstance(c.get("description"), str) or not c["description"].strip():
                errors.append(f"{where}: commands[{i}].description is required")
            if not isinstance(c.get("argument_hint", ""), str):
                errors.append(f"{where}: commands[{i}].argument_hint must be a string")
            h = c.get("handler")
            if h is not None:
                endpoints = [k for k in ("grpc", "json_rpc", "mcp") if k in (h if isinstance(h, dict) else {})]
                if not isinstance(h, dict) or len(endpoints) != 1 or set(h) - {"grpc", "json_rpc", "mcp", "timeout_ms", "headers"}:
                    errors.append(f"{where}: commands[{i}].handler needs exactly one of grpc, json_rpc or mcp (and optionally timeout_ms, headers)")
                elif not re.match(r"https?://", str(h[endpoints[0]])):
                    errors.append(f"{where}: commands[{i}].handler URL must be http:// or https://")
            roles = c.get("roles")
            if roles is not None and (not isinstance(roles, list) or not all(
                    r in ("assignee", "reporter", "watcher", "admin") for r in roles)):
                errors.append(f"{where}: commands[{i}].roles must list assignee, reporter, watcher or admin")
            if not isinstance(c.get("hidden", False), bool):
                errors.append(f"{where}: commands[{i}].hidden must be true or false")
            names.append(c.get("name"))
        if len(set(names)) != len(names):
            errors.append(f"{where}: a command name appears twice")

# Step 5: the sidecar must not drift between the two variants.
def sidecar(path):
    for doc in docs_by_file.get(path, []):
        if isinstance(doc, dict) and doc.get("kind") in ("Deployment", "StatefulSet"):
            spec = doc["spec"]["template"]["spec"]
            for c in spec.get("initContainers", []):
                if c.get("name") == "a2a-commands":
                    return c, spec.get("securityContext"), spec.get("terminationGracePeriodSeconds")
    return None


DEPLOYMENT = os.path.join("deployment", "deployment.yaml")
STATEFULSET = os.path.join("statefulset", "statefulset.yaml")
a, b = sidecar(DEPLOYMENT), sidecar(STATEFULSET)
if a is None or b is None:
    errors.append(f"{DEPLOYMENT} / {STATEFULSET}: no a2a-commands init container found")
elif a != b:
    errors.append("the a2a-commands sidecar (or the pod securityContext / grace period) differs "
                  f"between {DEPLOYMENT} and {STATEFULSET}")
else:
    c = a[0]
    if c.get("restartPolicy") != "Always":
        errors.append("the a2a-commands init container needs restartPolicy: Always (native sidecar)")
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    drain = int(env.get("A2A_COMMANDS_DRAIN_SECONDS", "10"))
    grace = a[2] if a[2] is not None else 30
    if drain >= grace:
        errors.append(f"A2A_COMMANDS_DRAIN_SECONDS ({drain}) must be below terminationGracePeriodSeconds ({grace})")
    # Metrics: the listener, the port named `metrics` and the scrape annotations agree.
    metrics = env.get("A2A_COMMANDS_METRICS_LISTEN", "off")
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    for path in (DEPLOYMENT, STATEFULSET):
        template = next(d for d in docs_by_file[path] if d.get("kind") in ("Deployment", "StatefulSet"))
        annotations = template["spec"]["template"]["metadata"].get("annotations") or {}
        if metrics == "off" or ":" not in metrics:
            errors.append(f"{path}: A2A_COMMANDS_METRICS_LISTEN must be an address (metrics on)")
            continue
        port = int(metrics.rsplit(":", 1)[1])
        if ports.get("metrics") != port:
            errors.append(f"{path}: the container port named metrics must be {port}")
        if annotations.get("prometheus.io/scrape") != "true" or annotations.get("prometheus.io/port") != str(port) \
                or annotations.get("prometheus.io/path") != "/metrics":
            errors.append(f"{path}: the pod template needs prometheus.io/scrape \"true\", /port \"{port}\", /path /metrics")

# Step 6: the example etcd forms one cluster. Its members find each other by the names
# in --initial-cluster; a name that is not a replica under the Service, a Service that
# hides members until they are ready, or members started one by one leave it without a
# quorum for good.
ETCD_DIR = os.path.join("fleet", "etcd")
ETCD = os.path.join(ETCD_DIR, "statefulset.yaml")
etcd_docs = [d for p, ds in docs_by_file.items() if os.path.dirname(p) == ETCD_DIR for d in ds
             if isinstance(d, dict)]
sts = next((d for d in docs_by_file.get(ETCD, []) if isinstance(d, dict) and d.get("kind") == "StatefulSet"), None)
if sts is None:
    errors.append(f"{ETCD}: no StatefulSet found")
else:
    name, spec = sts["metadata"]["name"], sts["spec"]
    service, replicas = spec.get("serviceName"), spec.get("replicas", 1)
    svc = next((d for d in etcd_docs if d.get("kind") == "Service"
                and d["metadata"].get("name") == service), None)
    container = next((c for c in spec["template"]["spec"].get("containers", [])
                      if c.get("name") == "etcd"), {})
    flags = dict(a.split("=", 1) for a in container.get("command", []) + container.get("args", [])
                 if a.startswith("--") and "=" in a)
    ports = {p.get("name"): p.get("containerPort") for p in container.get("ports", [])}
    expected = ",".join(f"{name}-{i}=http://{name}-{i}.{service}:{ports.get('peer')}"
                        for i in range(replicas))
    if replicas < 3 or replicas % 2 == 0:
        errors.append(f"{ETCD}: replicas must be odd and at least 3 (an even number adds no fault tolerance)")
    if spec.get("podManagementPolicy") != "Parallel":
        errors.append(f"{ETCD}: podManagementPolicy must be Parallel (one by one, the first "
                      "member waits for a quorum that the others would give)")
    if svc is None or svc["spec"].get("clusterIP") != "None" or svc["spec"].get("publishNotReadyAddresses") is not True:
        errors.append(f"{ETCD}: serviceName {service!r} must be a headless Service of {ETCD_DIR} "
                      "with publishNotReadyAddresses: true")
    if flags.get("--initial-cluster") != expected:
        errors.append(f"{ETCD}: --initial-cluster must be {expected} (the replicas' names under the Service)")
    for flag, port in (("--initial-advertise-peer-urls", "peer"), ("--advertise-client-urls", "client")):
        if flags.get(flag) != f"http://$(POD_NAME).{service}:{ports.get(port)}":
            errors.append(f"{ETCD}: {flag} must be http://$(POD_NAME).{service}:{ports.get(port)}")
    pod_name = next((e for e in container.get("env", []) if e.get("name") == "POD_NAME"), {})
    if flags.get("--name") != "$(POD_NAME)" or \
            (pod_name.get("valueFrom") or {}).get("fieldRef", {}).get("fieldPath") != "metadata.name":
        errors.append(f"{ETCD}: --name must be $(POD_NAME), from the downward API's metadata.name")

for e in errors:
    print(f"FAIL: {e}")
n_k = len([p for p in docs_by_file if is_kustomization(p)])
print(f"{'FAIL' if errors else 'ok'}: parsed {len(files)} YAML files "
      f"({n_k} kustomizations, {len(manifests)} manifest files, {len(patch_files)} patches)")
sys.exit(1 if errors else 0)
PY
  failed=1
fi
for list in manifests kustomizations opt-in; do
  [[ -f "$work/$list" ]] || : >"$work/$list"
done

# Step 3 (and 7): the schema check. kubernetes-validate exits 0 when a kind has no schema
# (it prints WARN), so anything but one INFO "passed" line per document is a failure.
schema_check() { # file, expected number of documents, label
  local file="$1" expected="$2" label="$3" output rc=0 passed
  output="$("${kv[@]}" --strict -k "$KUBERNETES_VERSION" "$file" 2>&1)" || rc=$?
  passed="$(grep -c '^INFO .* passed for resource ' <<<"$output" || true)"
  if [[ $rc -ne 0 ]] || grep -qv '^INFO .* passed for resource ' <<<"$output" || [[ "$passed" -ne "$expected" ]]; then
    echo "FAIL: $label ($passed of $expected documents passed, exit $rc)"
    sed 's/^/    /' <<<"$output"
    failed=1
  else
    sed "s|^INFO $file |ok: $label: |" <<<"$output"
  fi
}

while read -r file docs; do
  schema_check "$deploy_dir/$file" "$docs" "$file"
done <"$work/manifests"

# Step 7: render the kustomizations, if a renderer is installed.
render_check() { # kustomization directory, output file, label -> renders and schema-checks
  local dir="$1" rendered="$2" label="$3" docs
  if ! "${render[@]}" "$dir" >"$rendered" 2>"$work/render.err"; then
    echo "FAIL: ${render[*]} $label"
    sed 's/^/    /' "$work/render.err"
    rm -f "$rendered"
    failed=1
    return
  fi
  docs="$("$python" -c 'import sys, yaml; print(sum(1 for d in yaml.safe_load_all(open(sys.argv[1])) if d))' "$rendered")"
  schema_check "$rendered" "$docs" "rendered $label"
}

if [[ "${SKIP_KUSTOMIZE:-}" == 1 ]]; then
  echo "skipped: kustomize rendering, patches and the fleet overlay's checks (SKIP_KUSTOMIZE=1)"
else
  render=()
  if command -v kubectl >/dev/null 2>&1; then
    render=(kubectl kustomize)
  elif command -v kustomize >/dev/null 2>&1; then
    render=(kustomize build)
  fi
  if [[ ${#render[@]} -eq 0 ]]; then
    echo "skipped: kustomize rendering, patches and the fleet overlay's checks (neither kubectl nor kustomize is installed)"
  else
    mkdir -p "$work/rendered"
    # rendered/<dir with / as ->.yaml: deploy.yaml for deploy/ itself.
    rendered_name() { if [[ $1 == . ]]; then echo deploy; else echo "deploy-${1//\//-}"; fi; }
    while read -r root; do
      render_check "$deploy_dir/$root" "$work/rendered/$(rendered_name "$root").yaml" "deploy/${root#.}"
    done <"$work/kustomizations"
    # Opt-in patches: a copy of deploy/ with them uncommented, rendered the same way.
    while read -r root patches; do
      copy="$work/opt-in-$(rendered_name "$root")/deploy"
      mkdir -p "$(dirname "$copy")"
      cp -R "$deploy_dir" "$copy"
      sed -E -i 's/^([ \t]*)#[ \t]*(-[ \t]*path:)/\1\2/' "$copy/$root/kustomization.yaml"
      render_check "$copy/$root" "$work/rendered/$(rendered_name "$root")+opt-in.yaml" \
        "deploy/${root#.} with ${patches//,/, }"
    done <"$work/opt-in"

    # The fleet overlay, as rendered: with its patches as they stand (against the example
    # etcd), and with its opt-in patches (against some other etcd).
    fleet=("$work/rendered/deploy-fleet.yaml" "$work/rendered/deploy-fleet+opt-in.yaml")
    if [[ ! -f "$work/rendered/deploy.yaml" || ! -f "$work/rendered/deploy-fleet-etcd.yaml" || ! -f "${fleet[0]}" ]]; then
      echo "FAIL: the fleet overlay's checks need deploy/, deploy/fleet/ and deploy/fleet/etcd/ rendered"
      failed=1
    elif ! "$python" - "$work/rendered/deploy.yaml" "$work/rendered/deploy-fleet-etcd.yaml" \
        "deploy/fleet" "${fleet[0]}" 1 \
        "deploy/fleet with its opt-in patches" "${fleet[1]}" 0 <<'PY'; then
import os
import sys
from urllib.parse import urlsplit

import yaml

base_path, etcd_path, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
PREFIX = "A2A_COMMANDS_FLEET_"
FLEET_VARS = {PREFIX + n for n in (
    "ETCD_ENDPOINTS", "PREFIX", "ETCD_CA_FILE", "ETCD_CERT_FILE", "ETCD_KEY_FILE", "ETCD_USER",
    "ETCD_PASSWORD_FILE", "TIMEOUT_MS", "MAX_TXN_OPS", "MAX_REQUEST_BYTES", "MEMBER_NAME")}
FILES = [PREFIX + n for n in ("ETCD_CA_FILE", "ETCD_CERT_FILE", "ETCD_KEY_FILE", "ETCD_PASSWORD_FILE")]
# The sidecar's defaults, and etcd's, for the limits a transaction keeps to.
LIMITS = (("MAX_TXN_OPS", "--max-txn-ops", 128), ("MAX_REQUEST_BYTES", "--max-request-bytes", 1572864))


def load(path):
    with open(path, encoding="utf-8") as f:
        return [d for d in yaml.safe_load_all(f) if d]


def gateway_pod(docs):
    """The Deployment whose pod has the a2a-commands sidecar: (deployment, pod spec, sidecar)."""
    found = [(d, d["spec"]["template"]["spec"]) for d in docs if d.get("kind") == "Deployment"]
    found = [(d, s, c) for d, s in found for c in s.get("initContainers", []) if c.get("name") == "a2a-commands"]
    return found[0] if len(found) == 1 else None


base = gateway_pod(load(base_path))
etcd_docs = load(etcd_path)
sts = next(d for d in etcd_docs if d.get("kind") == "StatefulSet")
etcd = next(c for c in sts["spec"]["template"]["spec"]["containers"] if c["name"] == "etcd")
etcd_flags = dict(a.split("=", 1) for a in etcd.get("command", []) + etcd.get("args", [])
                  if a.startswith("--") and "=" in a)
etcd_client = next(p["containerPort"] for p in etcd["ports"] if p.get("name") == "client")
members = [f"{sts['metadata']['name']}-{i}.{sts['spec']['serviceName']}" for i in range(sts["spec"]["replicas"])]

errors = []
for i in range(0, len(variants), 3):
    label, path, example = variants[i], variants[i + 1], variants[i + 2] == "1"
    if not os.path.isfile(path):
        continue
    before = len(errors)
    fleet = gateway_pod(load(path))
    if base is None or fleet is None:
        errors.append(f"{label}: expected one Deployment with an a2a-commands init container")
        continue
    deployment, pod, sidecar = fleet
    if deployment["spec"].get("replicas") != 3:
        errors.append(f"{label}: replicas must be 3 (deploy/README.md says three)")
    env = {e["name"]: e for e in sidecar.get("env", [])}
    for name in sorted(n for n in env if n.startswith(PREFIX) and n not in FLEET_VARS):
        errors.append(f"{label}: {name} is not a fleet setting (a typo?)")
    value = {n: e.get("value") for n, e in env.items()}
    endpoints = (value.get(PREFIX + "ETCD_ENDPOINTS") or "").split(",")
    schemes, hosts = set(), []
    for endpoint in endpoints:
        try:
            url = urlsplit(endpoint.strip())
            port = url.port
        except ValueError:
            url, port = None, None
        if url is None or url.scheme not in ("http", "https") or not url.hostname or port is None \
                or url.path not in ("", "/") or url.query:
            errors.append(f"{label}: {PREFIX}ETCD_ENDPOINTS {endpoint!r} is not http(s)://host:port "
                          "(setting the variable turns fleet mode on)")
            continue
        schemes.add(url.scheme)
        hosts.append((url.scheme, url.hostname, port))
    if len(schemes) > 1:
        errors.append(f"{label}: {PREFIX}ETCD_ENDPOINTS must be all http:// or all https://")
    member = (env.get(PREFIX + "MEMBER_NAME", {}).get("valueFrom") or {}).get("fieldRef", {})
    if member.get("fieldPath") != "metadata.name":
        errors.append(f"{label}: {PREFIX}MEMBER_NAME must come from the pod's metadata.name")
    tls = [n for n in FILES[:3] if n in env]
    if tls and schemes != {"https"}:
        errors.append(f"{label}: {', '.join(tls)} need https:// endpoints")
    for pair in ((PREFIX + "ETCD_CERT_FILE", PREFIX + "ETCD_KEY_FILE"),
                 (PREFIX + "ETCD_USER", PREFIX + "ETCD_PASSWORD_FILE")):
        if (pair[0] in env) != (pair[1] in env):
            errors.append(f"{label}: {pair[0]} and {pair[1]} go together")
    volumes = {v["name"] for v in pod.get("volumes", [])}
    for name in (n for n in FILES if n in env):
        file = value.get(name) or ""
        mounts = [m for m in sidecar.get("volumeMounts", []) if file.startswith(m["mountPath"].rstrip("/") + "/")]
        if not mounts or mounts[0]["name"] not in volumes:
            errors.append(f"{label}: {name} ({file}) is not inside a volume mounted in the sidecar")
    # Apart from its fleet settings (and the volumes they need), the pod is deploy/'s;
    # the gateway container is untouched, so no etcd credential reaches it.
    _, base_pod, base_sidecar = base
    stripped = dict(sidecar, env=[e for e in sidecar.get("env", []) if not e["name"].startswith(PREFIX)],
                    volumeMounts=[m for m in sidecar.get("volumeMounts", []) if m in base_sidecar.get("volumeMounts", [])])
    if stripped != base_sidecar:
        errors.append(f"{label}: the a2a-commands sidecar differs from deploy/'s by more than its fleet settings")
    if pod.get("containers") != base_pod.get("containers"):
        errors.append(f"{label}: the gateway container differs from deploy/'s (only the sidecar gets etcd settings)")
    if any(v not in pod.get("volumes", []) for v in base_pod.get("volumes", [])):
        errors.append(f"{label}: a volume of deploy/'s pod is changed or missing")
    free = ("initContainers", "containers", "volumes", "topologySpreadConstraints")
    others = [c for c in pod.get("initContainers", []) if c is not sidecar]
    if {k: v for k, v in pod.items() if k not in free} != {k: v for k, v in base_pod.items() if k not in free} \
            or others != [c for c in base_pod.get("initContainers", []) if c is not base_sidecar]:
        errors.append(f"{label}: the pod differs from deploy/'s by more than the sidecar's fleet settings, "
                      "volumes and topologySpreadConstraints")
    if example:
        if hosts != [("http", m, etcd_client) for m in members]:
            errors.append(f"{label}: {PREFIX}ETCD_ENDPOINTS must name the example etcd's members: "
                          + ",".join(f"http://{m}:{etcd_client}" for m in members))
        for ours, theirs, default in LIMITS:
            if int(value.get(PREFIX + ours) or default) > int(etcd_flags.get(theirs, default)):
                errors.append(f"{label}: {PREFIX}{ours} is above the example etcd's {theirs}")
    if len(errors) == before:
        print(f"ok: {label}: 3 replicas, fleet settings valid ({len(endpoints)} {'/'.join(sorted(schemes))} "
              f"endpoints{', TLS' if tls else ''}{', etcd user' if PREFIX + 'ETCD_USER' in env else ''}), "
              "the rest as in deploy/")

for e in errors:
    print(f"FAIL: {e}")
sys.exit(1 if errors else 0)
PY
      failed=1
    fi

    # The front overlay, as rendered: the Service sends clients to the sidecar's front
    # port, the front's upstream is a port of the agent's container on the pod's
    # loopback, and its settings name only front settings.
    front="$work/rendered/deploy-front.yaml"
    if [[ ! -f "$front" ]]; then
      echo "FAIL: the front overlay's checks need deploy/front/ rendered"
      failed=1
    elif ! "$python" - "$front" <<'PY'; then
import sys
from urllib.parse import urlsplit

import yaml

with open(sys.argv[1], encoding="utf-8") as f:
    docs = [d for d in yaml.safe_load_all(f) if d]
errors = []
PREFIX = "A2A_COMMANDS_FRONT_"
# Every front setting `serve` reads (src/config/cli.rs), so that one uncommented from
# front-patch.yaml passes and a typo does not.
KNOWN = {PREFIX + n for n in (
    "UPSTREAM", "LISTEN", "PUBLIC_URL", "TIMEOUT_MS", "MAX_BODY_BYTES", "CARD_REFRESH_SECONDS",
    "RECORDS_MAX", "RECORDS_EXPIRY_SECONDS", "SIGNING_KEY_FILE", "SIGNING_KEY_ID", "SIGNING_JKU",
    "DEFAULT_ROLE", "ROLE_HEADER", "SENDER_HEADER", "UPSTREAM_GRPC", "UPSTREAM_A2A_VERSION",
    "JWT_JWKS_FILE", "JWT_JWKS_URL", "JWT_ISSUER", "JWT_AUDIENCE", "JWT_SENDER_CLAIM",
    "JWT_ROLE_CLAIM", "JWT_REQUIRED", "JWT_JWKS_REFRESH_SECONDS")}
deployment = next(d for d in docs if d.get("kind") == "Deployment")
pod = deployment["spec"]["template"]["spec"]
sidecar = next(c for c in pod.get("initContainers", []) if c["name"] == "a2a-commands")
agent = next(c for c in pod["containers"] if c["name"] == "gateway")
env = {e["name"]: e.get("value") for e in sidecar.get("env", [])}
for name in env:
    if name.startswith(PREFIX) and name not in KNOWN:
        errors.append(f"deploy/front: {name} is not a front setting (a typo?)")
upstream = urlsplit(env.get(PREFIX + "UPSTREAM") or "")
agent_ports = {p["containerPort"] for p in agent.get("ports", [])}
if upstream.scheme != "http" or upstream.hostname != "127.0.0.1" or upstream.port not in agent_ports:
    errors.append(f"deploy/front: {PREFIX}UPSTREAM must be http://127.0.0.1:<a port of the agent's container {sorted(agent_ports)}>")
listen_port = int((env.get(PREFIX + "LISTEN") or "0.0.0.0:8080").rsplit(":", 1)[1])
front_ports = {p["name"]: p["containerPort"] for p in sidecar.get("ports", [])}
if upstream.port in front_ports.values():
    errors.append(f"deploy/front: the agent's port {upstream.port} is one of the sidecar's {sorted(front_ports.values())}")
# An unchanged agent needs nothing of the sidecar's: no Secret (the admin token) reaches it.
secrets = {v["name"] for v in pod.get("volumes", []) if "secret" in v}
for mount in agent.get("volumeMounts", []):
    if mount["name"] in secrets:
        errors.append(f"deploy/front: the agent's container mounts the Secret volume {mount['name']!r}")
if listen_port not in front_ports.values():
    errors.append(f"deploy/front: the sidecar does not expose its front port {listen_port}")
services = [d for d in docs if d.get("kind") == "Service"]
targets = [p.get("targetPort") for s in services for p in s["spec"]["ports"]]
if not any(front_ports.get(t) == listen_port or t == listen_port for t in targets):
    errors.append(f"deploy/front: no Service port targets the front's port ({listen_port}): {targets}")
if not env.get(PREFIX + "PUBLIC_URL"):
    errors.append(f"deploy/front: {PREFIX}PUBLIC_URL is not set (the card would name the pod's address)")
for e in errors:
    print(f"FAIL: {e}")
if not errors:
    print(f"ok: deploy/front: the Service targets the front's port {listen_port}, the front's upstream is the agent's port {upstream.port}")
sys.exit(1 if errors else 0)
PY
      failed=1
    fi
  fi
fi

if [[ $failed -ne 0 ]]; then
  echo "validate.sh: FAILED" >&2
  exit 1
fi
echo "validate.sh: all manifests valid for Kubernetes $KUBERNETES_VERSION"
