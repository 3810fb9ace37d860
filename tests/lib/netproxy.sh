# Starts the test WAN emulator / fault proxy (tests/tools/netproxy.c) in
# front of the test sshd (bash; source after sshd.sh).
#
# proxy_start ARGS...   starts netproxy ARGS... 127.0.0.1:$SSHD_PORT; sets
#                       PROXY_PORT, PROXY_PID, and adds Host ferry-proxy to
#                       $SSH_CONFIG (the sshd's host key accepted there too)
# silent_start          starts a server on 127.0.0.1 that accepts TCP
#                       connections and never says a word (an SSH handshake
#                       with it hangs); sets SILENT_PORT

proxy_stop() {
    if [ -n "${PROXY_PID:-}" ]; then
        kill -CONT "$PROXY_PID" 2>/dev/null || true
        kill "$PROXY_PID" 2>/dev/null || true
        wait "$PROXY_PID" 2>/dev/null || true
        PROXY_PID=""
    fi
}

proxy_start() {
    proxy_stop
    rm -f "$T/proxy.port"
    "$TOOLS/netproxy" --port-file "$T/proxy.port" --lifetime 600 "$@" \
        "127.0.0.1:$SSHD_PORT" 2>>"$T/proxy.log" &
    PROXY_PID=$!
    at_exit proxy_stop
    for _ in $(seq 1 100); do
        [ -s "$T/proxy.port" ] && break
        sleep 0.05
    done
    PROXY_PORT=$(cat "$T/proxy.port")
    [ -n "$PROXY_PORT" ] || fail "netproxy did not start"
    known_host_for 127.0.0.1 "$PROXY_PORT" "$SSHD_DIR" >>"$SSHD_DIR/known_hosts"
    # One Host ferry-proxy block, for the proxy running now.
    [ -e "$SSH_CONFIG.base" ] || cp "$SSH_CONFIG" "$SSH_CONFIG.base"
    cp "$SSH_CONFIG.base" "$SSH_CONFIG"
    cat >>"$SSH_CONFIG" <<CONF
Host ferry-proxy
    HostName 127.0.0.1
    Port $PROXY_PORT
    User $(id -un)
    IdentityFile $SSH_KEY
    IdentitiesOnly yes
    UserKnownHostsFile $SSHD_DIR/known_hosts
    StrictHostKeyChecking yes
CONF
}

silent_stop() {
    if [ -n "${SILENT_PID:-}" ]; then
        kill "$SILENT_PID" 2>/dev/null || true
        SILENT_PID=""
    fi
}

silent_start() {
    SILENT_PORT=$(free_port)
    python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
time.sleep(120)' "$SILENT_PORT" &
    SILENT_PID=$!
    at_exit silent_stop
    for _ in $(seq 1 100); do
        python3 -c 'import socket, sys
socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' \
            "$SILENT_PORT" 2>/dev/null && return 0
        sleep 0.05
    done
    fail "the silent server did not start"
}
