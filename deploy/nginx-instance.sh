#!/usr/bin/env bash
# Takes one instance out of nginx's rotation, or puts it back: `down` before stopping it, `up` once
# its own /up answers 200 again. Open-source nginx has no active health checks: without this, it
# learns an instance stopped only from failed connects, and a POST it had already sent on a
# connection the stopping instance's kernel then reset cannot be retried safely (it answers 502).
# Taken out by a reload, the instance gets no new request; requests under way finish.
#
#   deploy/nginx-instance.sh down 10.0.0.11:8000    # then SIGTERM that instance, start it again
#   deploy/nginx-instance.sh up 10.0.0.11:8000      # once http://10.0.0.11:8000/up answers 200
#
# NGINX_SITE: the rendered recipe (default /etc/nginx/conf.d/trading-api.conf).
# NGINX_CMD: how to call nginx (default `nginx`; the system test adds its -p/-c arguments). Not
# NGINX: nginx itself reads that variable (sockets handed over in a binary upgrade).
set -euo pipefail

usage() { echo "usage: $0 down|up <host:port>" >&2; exit 2; }
[ $# -eq 2 ] || usage
state="$1"
address="$2"
site="${NGINX_SITE:-/etc/nginx/conf.d/trading-api.conf}"
read -r -a nginx <<<"${NGINX_CMD:-nginx}"

# The instance's `server` line in the upstream block: its ` down` taken off, then put on for `down`.
line="^[[:space:]]*server[[:space:]]+${address//./\\.}[[:space:];]"
grep -Eq "$line" "$site" || { echo "no 'server $address ...;' line in $site" >&2; exit 1; }
case "$state" in
  down | up) sed -E -i "/$line/ s/[[:space:]]+down;/;/" "$site" ;;
  *) usage ;;
esac
if [ "$state" = down ]; then sed -E -i "/$line/ s/;[[:space:]]*$/ down;/" "$site"; fi

# Checked before the reload: a broken file leaves the running nginx as it was.
"${nginx[@]}" -t -q
"${nginx[@]}" -s reload
# The reload is a signal: give the master a moment to start the new workers and retire the old,
# which send nothing new to the instance (requests under way finish; its drain answers them).
sleep 1
