"""Small compiled numerics shared by the kernels: SO(3) maps and small linear algebra."""
