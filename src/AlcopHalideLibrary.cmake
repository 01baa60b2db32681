# alcop_add_halide_library(NAME TARGETS t <add_halide_library's other arguments>):
# add_halide_library, with every library of one target sharing one Halide runtime, as an app
# that links several kernels needs: the first library built for a target carries the runtime,
# the others use it (USE_RUNTIME). Installed with the package (find_package(HalideAlcop)), so
# that a user's app builds its kernels the way this project builds its own:
#   alcop_add_halide_library(k_gemm FROM HalideAlcop::generators GENERATOR gemm
#                            TARGETS host-cuda-cuda_capability_80 PARAMS type=f16)
function(alcop_add_halide_library NAME)
    cmake_parse_arguments(ARG "" "TARGETS;SCHEDULE" "" ${ARGN})
    string(MAKE_C_IDENTIFIER "alcop_runtime_${ARG_TARGETS}" runtime)
    get_property(runtime_owner GLOBAL PROPERTY "${runtime}")
    if (runtime_owner)
        set(use_runtime USE_RUNTIME "${runtime_owner}.runtime")
    else ()
        set_property(GLOBAL PROPERTY "${runtime}" "${NAME}")
        set(use_runtime "")
    endif ()
    if (ARG_SCHEDULE)
        set(schedule SCHEDULE ${ARG_SCHEDULE})
    endif ()
    add_halide_library(${NAME} TARGETS ${ARG_TARGETS} ${use_runtime} ${schedule} ${ARG_UNPARSED_ARGUMENTS})
    if (ARG_SCHEDULE)  # the variable add_halide_library sets, in the caller's scope
        set(${ARG_SCHEDULE} "${${ARG_SCHEDULE}}" PARENT_SCOPE)
    endif ()
endfunction()
