// rp_demangle (report.h): kernel names as the GPU records carry them are C++ mangled names
// ("_Z4gemmPKfS0_Pfi"); the report shows them as a programmer wrote them
// ("gemm(float const*, float const*, float*, int)"), demangled by libstdc++'s own demangler
// (the one the C++ runtime uses for exception messages), never by hand.
#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

// Names in the trace come from the traced program: a hostile one must not cost the report more
// than a moment. Real kernel names (templates of templates included) stay far below this.
static const size_t max_mangled = 8192;

extern "C" char *rp_demangle(const char *mangled)
{
	if (!mangled || std::strncmp(mangled, "_Z", 2) != 0 || std::strlen(mangled) > max_mangled)
		return nullptr;
	int status = 0;
	char *d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
	if (status != 0) {
		std::free(d);
		return nullptr;
	}
	return d;
}
