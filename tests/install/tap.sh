# Sourced by the install tests: TAP helpers and the version.
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fail=1; echo "not ok $n - $1"; }
# check DESCRIPTION SHELL-CODE: one TAP line for whether the code succeeds.
# The code runs in a subshell: its "exit 1" fails the check, not the test.
# Returns the code's success, for "check ... || show-why".
check() { if (eval "$2"); then ok "$1"; else not_ok "$1"; return 1; fi; }
version=$(tools/version)
