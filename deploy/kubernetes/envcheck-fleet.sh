#!/bin/bash
# Check every GPU node of the current kubectl context with envcheck and merge the reports:
# applies envcheck-daemonset.yaml, waits for every node's doctor, collects each pod's report
# into a folder, deletes the DaemonSet (it holds one GPU per node) and exits with
# `envcheck report`'s code: the worst node's, a GPU node without a report counting as a failure.
#
#   deploy/kubernetes/envcheck-fleet.sh [REPORTS_DIR]   (default ./envcheck-reports/k8s-<UTC time>)
#
# Needs kubectl, and envcheck where this runs:
#   pip install paddle-envcheck==0.1.0
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
manifest="$here/envcheck-daemonset.yaml"
reports="${1:-envcheck-reports/k8s-$(date -u +%Y%m%dT%H%M%SZ)}"
namespace=envcheck
selector=app.kubernetes.io/name=envcheck
gpu_nodes=nvidia.com/gpu.present=true   # the DaemonSet's nodeSelector
timeout="${ENVCHECK_TIMEOUT:-30m}"

mkdir -p "$reports"
kubectl get nodes -l "$gpu_nodes" -o name | sed 's|^node/||' > "$reports/expected-hosts.txt"
kubectl apply -f "$manifest"
trap 'kubectl delete --ignore-not-found -f "$manifest" >&2' EXIT
# Ready = the init container (the doctor) finished on every scheduled node, or the timeout hit:
# either way collect what is there; the merge names the nodes without a report.
kubectl -n "$namespace" rollout status daemonset/envcheck --timeout="$timeout" || true

kubectl -n "$namespace" get pods -l "$selector" \
  -o jsonpath='{range .items[*]}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' |
  while read -r pod node; do
    if kubectl -n "$namespace" logs "$pod" -c doctor > "$reports/$node.json.part" 2>/dev/null \
      && [ -s "$reports/$node.json.part" ]; then
      mv "$reports/$node.json.part" "$reports/$node.json"
    else
      rm -f "$reports/$node.json.part"
      kubectl -n "$namespace" describe pod "$pod" > "$reports/$node.describe.txt" 2>&1 || true
    fi
  done

status=0
envcheck report --expect-hosts "$reports/expected-hosts.txt" \
  --markdown "$reports/summary.md" --junit "$reports/envcheck.junit.xml" "$reports" || status=$?
exit "$status"
