#include "py_runtime.h"

/* Written by py_stack_setup (py_setup.c); read by the frame walk and the frame table. */
struct py_runtime py_rt;
