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
#     apiVersion and kind, every listed resource exists (a file, or a directory with a
#     kustomization.yaml), and every manifest file is listed by some kustomization;
#  3. every YAML document of every other file, with
#     `kubernetes-validate --strict -k 1.33.0`: unknown fields are errors, and so is a
#     document whose kind has no 1.33 schema (the tool itself only warns about those);
#  4. the commands.json in the ConfigMap is valid JSON of the expected shape;
#  5. the a2a-commands sidecar is the same in the Deployment and the StatefulSet, and its
#     metrics listener, port named `metrics` and scrape annotations agree;
#  6. if kubectl (or kustomize) is installed: each kustomization renders, and the
#     rendered objects pass step 3 too. Set SKIP_KUSTOMIZE=1 to skip this step.
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

# Steps 1, 2, 4 and 5. Writes "<file> <number of documents>" for each manifest (not
# kustomization) file that parsed to $work/manifests, for step 3. A failure here is
# reported at the end, after the schema checks have run too.
failed=0
if ! (cd "$deploy_dir" && "$python" - "$work/manifests" "${yaml_files[@]}" <<'PY'); then
import json
import os
import re
import sys

import yaml

out_path, files = sys.argv[1], sys.argv[2:]
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

manifests = [p for p in docs_by_file if not is_kustomization(p)]
# Written first, so that step 3 runs on every file that parsed even if a check here fails.
with open(out_path, "w") as out:
    for path in manifests:
        out.write(f"{path} {len(docs_by_file[path])}\n")
for path in manifests:
    if os.path.normpath(path) not in listed:
        errors.append(f"{path}: not listed in any kustomization.yaml resources")

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


a, b = sidecar("deployment.yaml"), sidecar(os.path.join("statefulset", "statefulset.yaml"))
if a is None or b is None:
    errors.append("deployment.yaml / statefulset/statefulset.yaml: no a2a-commands init container found")
elif a != b:
    errors.append("the a2a-commands sidecar (or the pod securityContext / grace period) differs "
                  "between deployment.yaml and statefulset/statefulset.yaml")
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
    for path in ("deployment.yaml", os.path.join("statefulset", "statefulset.yaml")):
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

for e in errors:
    print(f"FAIL: {e}")
n_k = len([p for p in docs_by_file if is_kustomization(p)])
print(f"{'FAIL' if errors else 'ok'}: parsed {len(files)} YAML files "
      f"({n_k} kustomizations, {len(manifests)} manifest files)")
sys.exit(1 if errors else 0)
PY
  failed=1
fi
[[ -f "$work/manifests" ]] || : >"$work/manifests"

# Step 3 (and 6): the schema check. kubernetes-validate exits 0 when a kind has no schema
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

# Step 6: render the kustomizations, if a renderer is installed.
if [[ "${SKIP_KUSTOMIZE:-}" == 1 ]]; then
  echo "skipped: kustomize rendering (SKIP_KUSTOMIZE=1)"
else
  render=()
  if command -v kubectl >/dev/null 2>&1; then
    render=(kubectl kustomize)
  elif command -v kustomize >/dev/null 2>&1; then
    render=(kustomize build)
  fi
  if [[ ${#render[@]} -eq 0 ]]; then
    echo "skipped: kustomize rendering (neither kubectl nor kustomize is installed)"
  else
    for root in . statefulset; do
      rendered="$work/rendered-$([[ $root == . ]] && echo deploy || echo "$root").yaml"
      if ! "${render[@]}" "$deploy_dir/$root" >"$rendered" 2>"$work/render.err"; then
        echo "FAIL: ${render[*]} deploy/$root"
        sed 's/^/    /' "$work/render.err"
        failed=1
        continue
      fi
      docs="$("$python" -c 'import sys, yaml; print(sum(1 for d in yaml.safe_load_all(open(sys.argv[1])) if d))' "$rendered")"
      label="deploy/${root#.}"
      schema_check "$rendered" "$docs" "rendered ${label%/.}"
    done
  fi
fi

if [[ $failed -ne 0 ]]; then
  echo "validate.sh: FAILED" >&2
  exit 1
fi
echo "validate.sh: all manifests valid for Kubernetes $KUBERNETES_VERSION"
