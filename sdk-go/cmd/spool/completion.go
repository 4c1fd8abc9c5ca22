package main

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// completionScript is bash completion for spool, built from the docs table so that it knows
// every command and subcommand; flags come from the command's own --help at completion time,
// so they cannot go stale. zsh runs it through bashcompinit.
func completionScript(shell string) string {
	var cmds []string
	var subs strings.Builder
	seen := map[string]bool{}
	for _, d := range docs {
		cmd, _, _ := strings.Cut(d.name, " ")
		if !seen[cmd] {
			seen[cmd] = true
			cmds = append(cmds, cmd)
			if names := subcommandNames(cmd); len(names) > 0 {
				fmt.Fprintf(&subs, "    %s) subs=%q ;;\n", cmd, strings.Join(names, " "))
			}
		}
	}
	cmds = append(cmds, "help")
	var b strings.Builder
	if shell == "zsh" {
		b.WriteString("# spool completion for zsh: source <(spool completion zsh)\n" +
			"(( $+functions[compdef] )) || { autoload -U +X compinit && compinit -u; }\n" +
			"autoload -U +X bashcompinit && bashcompinit\n")
	} else {
		b.WriteString("# spool completion for bash: source <(spool completion bash)\n")
	}
	fmt.Fprintf(&b, `_spool() {
  [[ -n $ZSH_VERSION ]] && setopt localoptions ksharrays # bash's 0-based COMP_WORDS
  local cur=${COMP_WORDS[COMP_CWORD]} cmd= sub= subs= w i
  for ((i = 1; i < COMP_CWORD; i++)); do
    w=${COMP_WORDS[i]}
    [[ $w == --brokers || $w == -brokers ]] && ((i++)) # its value is not a command
    [[ $w == -* ]] && continue
    if [[ -z $cmd ]]; then cmd=$w; elif [[ -z $sub ]]; then sub=$w; fi
  done
  case $cmd in
%s  esac
  if [[ -n $subs && " $subs " != *" $sub "* ]]; then sub=; fi
  if [[ $cur == -* ]]; then
    local flags
    flags=$("${COMP_WORDS[0]}" $cmd $sub --help 2>/dev/null | sed -n 's/^  \(--*[A-Za-z][A-Za-z-]*\).*/\1/p')
    COMPREPLY=($(compgen -W "$flags --brokers" -- "$cur"))
  elif [[ -z $cmd ]]; then
    COMPREPLY=($(compgen -W %q -- "$cur"))
  elif [[ -n $subs && -z $sub ]]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}
complete -F _spool spool
`, subs.String(), strings.Join(cmds, " "))
	return b.String()
}

// subcommandNames are cmd's subcommands, e.g. create list ... for topic.
func subcommandNames(cmd string) []string {
	var names []string
	for _, d := range subcommands(cmd) {
		names = append(names, strings.TrimPrefix(d.name, cmd+" "))
	}
	return names
}

func completionCmd(_ context.Context, args []string, stdout io.Writer) error {
	fs := newFlags("completion")
	if err := fs.parse(args); err != nil {
		return err
	}
	if fs.NArg() != 1 || (fs.Arg(0) != "bash" && fs.Arg(0) != "zsh") {
		return fs.bad("completion: want bash or zsh, got %q", strings.Join(fs.Args(), " "))
	}
	_, err := io.WriteString(stdout, completionScript(fs.Arg(0)))
	return err
}
