" timerace models are .spec files, as RPM's are (Vim makes those filetype `spec`): a
" .spec file with a `model NAME;` declaration near its top is a timerace model.
autocmd BufNewFile,BufRead *.spec
      \ if match(getline(1, 500), '^\s*model\s\+\h\w*\s*;') >= 0 | set filetype=timerace | endif
