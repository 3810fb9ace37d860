# bash completion for ferry (installed as
# $PREFIX/share/bash-completion/completions/ferry).
_ferry() {
    local cur prev words cword
    if declare -F _init_completion >/dev/null; then
        _init_completion -n : || return
    else
        cur=${COMP_WORDS[COMP_CWORD]}
        prev=${COMP_WORDS[COMP_CWORD - 1]}
        cword=$COMP_CWORD
        words=("${COMP_WORDS[@]}")
    fi
    local cmds="push pull status clean pack unpack help"
    # The long options of `ferry push --help` and `ferry pull --help`.
    local opts="--dry-run --exclude --include --exclude-from --delete
        --delete-excluded --watch --settle --ready-marker --keep --margin --force
        --bwlimit --checksum --compress --compress= --delta= --tensors= --basis
        --adopt --pack-threshold --volume-size --keep-volumes --name --json --quiet
        --verbose --progress --no-progress --block-size --streams
        --boxes-at-once --no-swarm
        --retry-for --retries --retry-wait --stall-timeout --agent
        --no-bootstrap --ssh-cmd --port --login --identity --help
        --archive --recursive --partial --times --perms --links
        --itemize-changes --sparse --human-readable --mkpath --whole-file"
    if [ "$cword" -eq 1 ]; then
        COMPREPLY=($(compgen -W "$cmds --version --help" -- "$cur"))
        return
    fi
    case ${words[1]} in
    help)
        COMPREPLY=($(compgen -W "$cmds" -- "$cur"))
        return
        ;;
    pack | unpack)
        opts="--volume-size --name --json --quiet --verbose --help"
        ;;
    esac
    case $prev in
    --exclude-from | -F | -i | --identity | --agent)
        COMPREPLY=($(compgen -f -- "$cur"))
        return
        ;;
    --exclude | --include | --bwlimit | --margin | --block-size | -j | \
        --streams | --retry-for | --retries | --retry-wait | \
        --stall-timeout | --boxes-at-once | -e | --ssh-cmd | -p | --port | \
        -l | --login | \
        -o | --watch | --settle | --ready-marker | --keep | --basis | \
        --adopt | --pack-threshold | --volume-size | --name)
        return
        ;;
    esac
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return
    fi
    # Hosts from ~/.ssh/config for host:, local files otherwise.
    local hosts
    hosts=$(awk 'tolower($1) == "host" { for (i = 2; i <= NF; i++)
        if ($i !~ /[*?!]/) print $i ":" }' ~/.ssh/config 2>/dev/null)
    COMPREPLY=($(compgen -W "$hosts local:" -- "$cur") \
        $(compgen -f -- "$cur"))
}
complete -o nospace -o default -F _ferry ferry
