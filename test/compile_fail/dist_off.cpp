// <devmat/dist.hpp> where the multi-GPU component is not built or not linked: a compile error.
#include <devmat/dist.hpp>
int main() { return 0; }
