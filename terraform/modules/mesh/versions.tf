terraform {
  required_version = ">= 1.8.0"
}
