# Starts the test WAN emulator / fault proxy (tests/tools/netproxy.c) in
# front of the test sshd (bash; source after sshd.sh).
#
# proxy_start ARGS...   starts netproxy ARGS... 127.0.0.1:$SSHD_PORT; sets
#                       PROXY_PORT, PROXY_PID, and adds Host ferry-proxy to
#                       $SSH_CONFIG (the sshd's host key accepted there too)

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
    printf '[127.0.0.1]:%s %s\n' "$PROXY_PORT" \
        "$(cut -d' ' -f1,2 "$SSHD_DIR/host_ed25519.pub")" \
        >>"$SSHD_DIR/known_hosts"
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
