# bash completion for cuhook: its commands, each command's options, and the values some of them
# take. Installed as share/bash-completion/completions/cuhook (loaded on the first `cuhook <TAB>`);
# or source it. tests/cli/test_install.py completes with it; tests/cli/test_docs_sync.py checks
# that every long option of each command's --help is here.

# the options cuhook run and cuhook attach share (src/cli/inject_opts.h)
_cuhook_inject_opts='-o --output --funcs --functions --count --record-all --stacks --no-stacks --stack-depth
  --ioctl --export-tables --gpu --cupti --names-window --capture-range --capture-range-end --force --max-size --flight-recorder --trigger --opt
  --call-timeout --agent -v --verbose -h --help -V --version'

_cuhook_options()
{
	case $1 in
	run) echo "--follow --delay --duration -q --quiet $_cuhook_inject_opts" ;;
	attach) echo "--duration --stop -q --quiet $_cuhook_inject_opts" ;;
	dump) echo '--timeout --agent -h --help -V --version' ;;
	report) echo '-f --format -o --output --force --top --sort --funcs --functions --thread --time-range --width
		--all --color --no-color --strict --separate --align --stream --no-stream -h --help -V --version' ;;
	funcs) echo '--funcs --functions --all -h --help -V --version' ;;
	esac
}

_cuhook()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
	local commands='run attach dump report funcs help'
	local i cmd=''
	for ((i = 1; i < COMP_CWORD; i++)); do
		case ${COMP_WORDS[i]} in
		-*) ;;
		*) cmd=${COMP_WORDS[i]}; break ;;
		esac
	done
	COMPREPLY=()
	if [[ -z $cmd ]]; then
		COMPREPLY=($(compgen -W "$commands -h --help -V --version" -- "$cur"))
		return
	fi
	if [[ $cmd == help ]]; then
		((COMP_CWORD == i + 1)) && COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		return
	fi
	# cuhook run ... -- PROG ARGS: a command, then the program's own arguments (files)
	local j
	for ((j = i + 1; j < COMP_CWORD; j++)); do
		if [[ $cmd == run && ${COMP_WORDS[j]} == -- ]]; then
			if ((j + 1 == COMP_CWORD)); then
				COMPREPLY=($(compgen -c -- "$cur"))
			else
				COMPREPLY=($(compgen -f -- "$cur"))
			fi
			return
		fi
	done
	case $prev in
	-o | --output | --cupti | --agent)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	-f | --format)
		COMPREPLY=($(compgen -W 'text json csv jsonl chrome perfetto folded sqlite' -- "$cur")); return ;;
	--sort)
		COMPREPLY=($(compgen -W 'total calls avg med min max name' -- "$cur")); return ;;
	--align)
		COMPREPLY=($(compgen -W 'realtime monotonic' -- "$cur")); return ;;
	--capture-range)
		COMPREPLY=($(compgen -W 'cudaProfilerApi none' -- "$cur")); return ;;
	--capture-range-end)
		COMPREPLY=($(compgen -W 'repeat stop none' -- "$cur")); return ;;
	--trigger)
		COMPREPLY=($(compgen -W 'error slow=' -- "$cur")); return ;;
	--funcs | --functions | --count | --stacks | --stack-depth | --max-size | --opt | --call-timeout | \
		--delay | --duration | --timeout | --top | --width | --thread | --time-range)
		return ;; # a value of the user's
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(_cuhook_options "$cmd")" -- "$cur"))
		return
	fi
	case $cmd in
	run) COMPREPLY=($(compgen -c -- "$cur")) ;; # the program, without a "--" before it
	attach | dump) COMPREPLY=($(compgen -W "$(command ps -e -o pid= 2>/dev/null)" -- "$cur")) ;;
	report) COMPREPLY=($(compgen -f -X '!*.bin' -- "$cur") $(compgen -d -- "$cur")) ;;
	funcs) COMPREPLY=($(compgen -f -- "$cur")) ;;
	esac
}
complete -F _cuhook cuhook
