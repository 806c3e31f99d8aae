# Metal Shading Language from one SPIR-V compute shader, with Metal buffer indices equal to the
# Vulkan bindings: storage buffers keep their binding numbers 0..n-1 (--msl-decoration-binding)
# and the push-constant block, which SPIRV-Cross would also put at 0, moves to n.
#   cmake -DSPIRV_CROSS=<spirv-cross> -DSPV=<shader.spv> -DMSL=<shader.metal> -DNAME=<name> -P msl_from_spirv.cmake
execute_process(
  COMMAND ${SPIRV_CROSS} ${SPV} --msl --msl-version 20100 --msl-decoration-binding --output ${MSL}.tmp
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "spirv-cross could not translate ${SPV} to Metal")
endif()
file(READ ${MSL}.tmp text)
file(REMOVE ${MSL}.tmp)
string(REGEX MATCHALL "device [A-Za-z0-9_]+& [A-Za-z0-9_]+ \\[\\[buffer\\([0-9]+\\)\\]\\]" storage "${text}")
set(count 0)  # one past the highest storage binding
foreach(buffer ${storage})
  string(REGEX REPLACE ".*buffer\\(([0-9]+)\\).*" "\\1" index "${buffer}")
  math(EXPR next "${index} + 1")
  if(next GREATER count)
    set(count ${next})
  endif()
endforeach()
string(REGEX REPLACE "(constant [A-Za-z0-9_]+& [A-Za-z0-9_]+ \\[\\[buffer\\()0(\\)\\]\\])" "\\1${count}\\2" text "${text}")
math(EXPR last "${count} - 1")
file(WRITE ${MSL} "// ${NAME}.comp in Metal Shading Language (SPIRV-Cross): storage buffers at their Vulkan\n// bindings 0..${last}, the push constants at buffer(${count}).\n${text}")
