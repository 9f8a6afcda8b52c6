# rm_app(<target>): an executable users run. Every app lands in <build>/bin so that the
# apps find each other there (the local kubelet puts the directory of the running `ringmaster`
# first on a pod's PATH, so `ringmaster-launcher` and `ringmaster-trainer` resolve uninstalled).
function(rm_app target)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endfunction()
