# Sourced by the ci/ scripts that measure another revision: `checkout_rev REV DIR` makes DIR a
# detached git worktree of REV (replacing what DIR held) and removes it when the script exits.
checkout_rev() {
  rm -rf "$2"
  git worktree add --detach "$2" "$1" >/dev/null
  # shellcheck disable=SC2064 # the path is fixed now, on purpose
  trap "git worktree remove --force '$2' >/dev/null 2>&1 || true" EXIT
}
