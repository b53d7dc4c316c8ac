# Generates FlatBuffers code at build time; nothing generated is committed.
#   bustle_flatc_cpp(OUT_VAR OUTDIR schema.fbs...)   -> <name>_generated.h
#   bustle_flatc_python(TARGET OUTDIR schema.fbs...) -> Python modules
function(bustle_flatc_cpp out_var outdir)
  set(outputs)
  foreach(schema ${ARGN})
    get_filename_component(stem ${schema} NAME_WE)
    set(out ${outdir}/${stem}_generated.h)
    add_custom_command(
      OUTPUT ${out}
      COMMAND ${FLATC} --cpp --scoped-enums --gen-name-strings --gen-object-api --gen-compare --reflect-names -o ${outdir}
              -I ${CMAKE_CURRENT_SOURCE_DIR}/schema ${schema}
      DEPENDS ${schema} ${ARGN}
      COMMENT "flatc (C++) ${stem}.fbs"
      VERBATIM)
    list(APPEND outputs ${out})
  endforeach()
  set(${out_var} ${outputs} PARENT_SCOPE)
endfunction()
