// The C++ side of chapter 08's TorchScript section: one program, two modes.
//
//   libtorch_side load MODEL.pt INPUT.txt
//       torch::jit::load the saved TorchScript module (its IR and weights) and run
//       its forward on the tensor in INPUT.txt; print the output tensor.
//   libtorch_side train STEPS LR
//       The C++ frontend: seed 0, x = randn(8, 3), y = x @ [1, -2, 0.5]^T + 0.3,
//       a torch::nn::Linear(3, 1), STEPS steps of SGD(LR) on the mean squared error;
//       print the loss before each step.
//
// A tensor in text: a line "shape d0 d1 ...", then a line "values v0 v1 ..." (row-major,
// float32, printed with 9 significant digits, enough to read a float back exactly).
#include <torch/script.h>
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

int usage() {
  std::cerr << "usage: libtorch_side load MODEL.pt INPUT.txt | libtorch_side train STEPS LR\n";
  return 2;
}

torch::Tensor read_tensor(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::string line, word;
  std::vector<int64_t> shape;
  std::vector<float> values;
  std::getline(in, line);
  std::istringstream shape_line(line);
  shape_line >> word;
  if (word != "shape") throw std::runtime_error(path + ": the first line must start with 'shape'");
  for (int64_t d; shape_line >> d;) shape.push_back(d);
  std::getline(in, line);
  std::istringstream value_line(line);
  value_line >> word;
  if (word != "values") throw std::runtime_error(path + ": the second line must start with 'values'");
  for (float v; value_line >> v;) values.push_back(v);
  int64_t numel = 1;
  for (int64_t d : shape) numel *= d;
  if (numel != static_cast<int64_t>(values.size()))
    throw std::runtime_error(path + ": the shape holds " + std::to_string(numel) + " values, the file " +
                             std::to_string(values.size()));
  return torch::tensor(values).reshape(shape);
}

void print_tensor(const torch::Tensor& t) {
  torch::Tensor c = t.to(torch::kFloat).contiguous();
  std::printf("shape");
  for (int64_t d : c.sizes()) std::printf(" %lld", static_cast<long long>(d));
  std::printf("\nvalues");
  const float* p = c.data_ptr<float>();
  for (int64_t i = 0; i < c.numel(); ++i) std::printf(" %.9g", p[i]);
  std::printf("\n");
}

int load(const std::string& model_path, const std::string& input_path) {
  torch::jit::script::Module module = torch::jit::load(model_path);
  module.eval();
  torch::NoGradGuard no_grad;
  torch::Tensor out = module.forward({read_tensor(input_path)}).toTensor();
  print_tensor(out);
  return 0;
}

int train(int steps, double lr) {
  torch::manual_seed(0);
  torch::Tensor x = torch::randn({8, 3});
  torch::Tensor y = torch::matmul(x, torch::tensor({1.0f, -2.0f, 0.5f}).reshape({3, 1})) + 0.3;
  torch::nn::Linear linear(3, 1);
  torch::optim::SGD sgd(linear->parameters(), torch::optim::SGDOptions(lr));
  std::printf("losses");
  for (int i = 0; i < steps; ++i) {
    sgd.zero_grad();
    torch::Tensor loss = torch::mse_loss(linear->forward(x), y);
    loss.backward();
    sgd.step();
    std::printf(" %.9g", loss.item<float>());
  }
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 4 && std::string(argv[1]) == "load") return load(argv[2], argv[3]);
    if (argc == 4 && std::string(argv[1]) == "train") return train(std::atoi(argv[2]), std::atof(argv[3]));
  } catch (const std::exception& e) {
    std::cerr << "libtorch_side: " << e.what() << "\n";
    return 1;
  }
  return usage();
}
