" timerace models: C-style comments, for gq, the comment leader and commenting plugins.
if exists("b:did_ftplugin")
  finish
endif
let b:did_ftplugin = 1
setlocal comments=s1:/*,mb:*,ex:*/,:// commentstring=//\ %s
setlocal formatoptions-=t formatoptions+=croql
let b:undo_ftplugin = "setlocal comments< commentstring< formatoptions<"
